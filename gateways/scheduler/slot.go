package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// schedulerSubject carries what a standby crew process asks of the
// leader's scheduler (add, cancel, run now): core NATS request and reply,
// outside the stored crew.> subjects.
const schedulerSubject = "rpc.crew.scheduler"

// Slot is the scheduler as the rest of the process sees it: the running
// one on the leader (or without a cluster), else a door to the leader's
// over NATS, so schedule_create and the jobs page work on every crew
// process sharing a cluster.
type Slot struct {
	nc  *nats.Conn // nil without a cluster
	cfg Config     // what Start starts the scheduler with

	mu  sync.Mutex
	cur *Scheduler
	sub *nats.Subscription
}

// NewSlot is the slot of a process on nc (nil without a cluster), with no
// scheduler running here yet: Start runs cfg's here.
func NewSlot(nc *nats.Conn, cfg Config) *Slot { return &Slot{nc: nc, cfg: cfg} }

// Start starts the slot's scheduler, with its sweeps and the profile
// jobs, on the process that runs the singletons (the cluster's leader, or
// the only one) and answers the standbys while it runs; stop stops it,
// after which the slot is a door to the leader's again.
func (s *Slot) Start(ctx context.Context, jobs []Job) (stop func(), err error) {
	cfg := s.cfg
	cfg.Jobs = jobs
	sched, err := Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := s.set(sched); err != nil {
		sched.Close()
		return nil, err
	}
	return func() {
		s.set(nil)
		sched.Close()
	}, nil
}

// set installs the running scheduler (nil: this process stopped leading)
// and answers the standbys' requests while it runs.
func (s *Slot) set(sched *Scheduler) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sub != nil {
		s.sub.Unsubscribe()
		s.sub = nil
	}
	s.cur = sched
	if sched == nil || s.nc == nil {
		return nil
	}
	sub, err := s.nc.Subscribe(schedulerSubject, func(m *nats.Msg) {
		var req schedRequest
		var err error
		if err = json.Unmarshal(m.Data, &req); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err = req.do(ctx, sched)
			cancel()
		}
		b, _ := json.Marshal(replyOf(err))
		m.Respond(b)
	})
	if err != nil {
		return fmt.Errorf("scheduler: answer standbys: %w", err)
	}
	s.sub = sub
	return nil
}

func (s *Slot) current() *Scheduler {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Add stores a chat job (schedule_create).
func (s *Slot) Add(ctx context.Context, j Job) error {
	return s.call(ctx, schedRequest{Op: "add", Job: &j})
}

// Cancel stops a chat job.
func (s *Slot) Cancel(ctx context.Context, id, reason string) error {
	return s.call(ctx, schedRequest{Op: "cancel", ID: id, Reason: reason})
}

// RunNow fires a job by hand.
func (s *Slot) RunNow(ctx context.Context, id string) error {
	return s.call(ctx, schedRequest{Op: "run", ID: id})
}

// SetProfile follows a reload of the agents' schedules (the leader's;
// a standby's profile is read when it becomes the leader).
func (s *Slot) SetProfile(ctx context.Context, jobs []Job) error {
	if sched := s.current(); sched != nil {
		return sched.SetProfile(ctx, jobs)
	}
	return nil
}

func (s *Slot) call(ctx context.Context, req schedRequest) error {
	if sched := s.current(); sched != nil {
		return req.do(ctx, sched)
	}
	if s.nc == nil {
		return errors.New("scheduler: not running")
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	msg, err := s.nc.RequestWithContext(ctx, schedulerSubject, b)
	if errors.Is(err, nats.ErrNoResponders) {
		return errors.New("scheduler: no crew process leads the cluster at the moment (a new leader takes over within seconds); try again")
	}
	if err != nil {
		return fmt.Errorf("scheduler: ask the leading crew process: %w", err)
	}
	var rep schedReply
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		return fmt.Errorf("scheduler: the leading crew process answered %q: %w", msg.Data, err)
	}
	return rep.err()
}

// schedRequest is one standby request.
type schedRequest struct {
	Op     string `json:"op"` // add, cancel, run
	Job    *Job   `json:"job,omitempty"`
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason,omitempty"`
}

func (r schedRequest) do(ctx context.Context, s *Scheduler) error {
	switch {
	case r.Op == "add" && r.Job != nil:
		return s.Add(ctx, *r.Job)
	case r.Op == "cancel":
		return s.Cancel(ctx, r.ID, r.Reason)
	case r.Op == "run":
		return s.RunNow(ctx, r.ID)
	}
	return fmt.Errorf("scheduler: unknown request %q", r.Op)
}

// schedReply carries an error across, keeping the kinds the callers map
// (schedule_create's refusals, the API's statuses).
type schedReply struct {
	Error string `json:"error,omitempty"`
	Kind  string `json:"kind,omitempty"`
}

var schedKinds = map[string]error{
	"unknown":   ErrUnknownJob,
	"exists":    ErrJobExists,
	"cancelled": ErrCancelled,
	"profile":   ErrProfileJob,
	"invalid":   ErrInvalidJob,
}

func replyOf(err error) schedReply {
	if err == nil {
		return schedReply{}
	}
	for k, e := range schedKinds {
		if errors.Is(err, e) {
			return schedReply{Error: err.Error(), Kind: k}
		}
	}
	return schedReply{Error: err.Error()}
}

func (r schedReply) err() error {
	if r.Error == "" {
		return nil
	}
	return remoteErr{text: r.Error, kind: schedKinds[r.Kind]}
}

// remoteErr is the leader's error, in its words, of its kind.
type remoteErr struct {
	text string
	kind error
}

func (e remoteErr) Error() string { return e.text }
func (e remoteErr) Unwrap() error { return e.kind }
