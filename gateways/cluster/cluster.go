// Package cluster is a crew process on a NATS cluster shared with other
// crew processes (R-ES-8, docs/adr/0006): its life lease, the
// conversations it claims, the leader lease for the singletons, and the
// take-over of a dead peer's work.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
	"github.com/nats-io/nuid"
	"go.etcd.io/bbolt"
)

// Several crew processes — one per home, each with its own projections
// and consumers — may share one NATS cluster (R-ES-8, docs/adr/0006).
// Each holds three kinds of lease in the cluster's lease bucket:
//
//   - proc.<id>: "this process is alive", for as long as it runs; its
//     budget reservations are settled by a peer only once it is gone.
//   - conv.<conversation>: this process runs the conversation's passes.
//     Every process sees every trigger; the one that takes the lease runs
//     it. A lease that expires (its holder died) is taken over by the
//     others, who resume the run as after a crash.
//   - leader: this process runs the Singletons (scheduler with the
//     approval sweep, day end and budget sweep; the team runtime's
//     passes; the Telegram poller). A
//     standby tries to take it every second.

// LeaseTTL is how long a dead crew process keeps its leases: the
// time, give or take a second, before another takes its work over.
const LeaseTTL = 5 * time.Second

// processKey is the lease key of a crew process's life.
func processKey(id string) string { return "proc." + id }

// Member is this crew process on a shared cluster.
type Member struct {
	id     string // <node>-<random>, new at each start
	desc   string // what a refused peer is told
	leases *events.Leases
	self   *events.Lease
	logger *slog.Logger
	// lost is closed once the life lease is lost and that is logged;
	// stop ends the watch (Close), told is closed when it has ended.
	lost, stop, told chan struct{}

	adoptEvery time.Duration // adoptEvery; shorter in tests
	mu         sync.Mutex
	stats      view.ClusterStats
}

// Join takes the life lease of this process on leases (node is the
// NATS node's name; what names the command, "serve", and dir the home).
func Join(ctx context.Context, leases *events.Leases, node, dir, what string, logger *slog.Logger) (*Member, error) {
	host, _ := os.Hostname()
	m := &Member{id: node + "-" + strings.ToLower(nuid.Next()[12:]), leases: leases, logger: logger, adoptEvery: adoptEvery,
		lost: make(chan struct{}), stop: make(chan struct{}), told: make(chan struct{})}
	leases.Raised().Tell(logger)
	m.desc = fmt.Sprintf("crew %s pid %d on %s (home %s, process %s)", what, os.Getpid(), host, dir, m.id)
	var err error
	if m.self, err = leases.Acquire(ctx, processKey(m.id), m.desc, LeaseTTL); err != nil {
		return nil, fmt.Errorf("join the cluster: %w", err)
	}
	go m.watchLife()
	return m, nil
}

// watchLife logs the loss of the life lease and closes lost, until Close.
func (m *Member) watchLife() {
	defer close(m.told)
	select {
	case <-m.self.Lost():
		m.logger.Error("lost this process's lease (the cluster was unreachable for its whole TTL; peers take its work over): stopping")
		close(m.lost)
	case <-m.stop:
	}
}

// Alive says whether the crew process holder still runs (its life lease
// is held); nil without leases (the embedded server: this is the only one).
func Alive(leases *events.Leases) func(ctx context.Context, holder string) (bool, error) {
	if leases == nil {
		return nil
	}
	return func(ctx context.Context, holder string) (bool, error) {
		_, ok, err := leases.Holder(ctx, processKey(holder))
		return ok, err
	}
}

// Run runs the singletons (start starts them). Without a cluster (m nil)
// they start here at once, and start's error is Run's. On one, m leads
// them while it holds the leader lease, takes over the conversations
// whose holder died and adopts those with work that nobody holds (db: the
// projections), on w. stop ends it all and waits.
func (m *Member) Run(ctx context.Context, w *loop.Worker, db *bbolt.DB, start func(ctx context.Context) (stop func(), err error)) (stop func(), err error) {
	if m == nil {
		return start(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { m.lead(ctx, start) })
	wg.Go(func() { m.takeOver(ctx, w) })
	wg.Go(func() { m.adopt(ctx, db, w) })
	return func() { cancel(); wg.Wait() }, nil
}

// Holder is m's budget holder, "" for none.
func (m *Member) Holder() string {
	if m == nil {
		return ""
	}
	return m.id
}

// Alive says whether the crew process holder still runs (its life lease
// is held), for loop.Background.OnCluster.
func (m *Member) Alive(ctx context.Context, holder string) (bool, error) {
	_, ok, err := m.leases.Holder(ctx, processKey(holder))
	return ok, err
}

// Claimer is m's loop.Claimer, nil for none.
func (m *Member) Claimer() loop.Claimer {
	if m == nil {
		return nil
	}
	return m.claim
}

// Stats are m's counters for /healthz and doctor.
func (m *Member) Stats() view.ClusterStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// Lost is closed when this process could not renew its life lease for a
// whole TTL (it is logged at error): its peers think it dead, settle its
// reservations and take its work over, so it must stop. nil (never
// closed) for no member.
func (m *Member) Lost() <-chan struct{} {
	if m == nil {
		return nil
	}
	return m.lost
}

// Close stops watching the life lease and gives it back.
func (m *Member) Close() {
	close(m.stop)
	<-m.told
	if err := m.self.Release(context.Background()); err != nil {
		m.logger.Warn("process lease not released; it expires by itself", "err", err)
	}
}

// claim takes a conversation's lease for the worker (loop.Claimer).
func (m *Member) claim(ctx context.Context, conversation string) (loop.Claim, error) {
	l, err := m.leases.Acquire(ctx, "conv."+conversation, m.id, LeaseTTL)
	if held := (*events.HeldError)(nil); errors.As(err, &held) {
		return nil, fmt.Errorf("%w: %s", loop.ErrClaimed, held.Holder)
	}
	if err != nil {
		return nil, err
	}
	return convLease{l}, nil
}

type convLease struct{ l *events.Lease }

func (c convLease) Lost() <-chan struct{} { return c.l.Lost() }
func (c convLease) Abandon()              { c.l.Abandon() }
func (c convLease) Release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.l.Release(ctx) // not released: it expires, and a peer takes the (finished) conversation over harmlessly
}

// takeOver hands the worker every conversation whose lease expires (its
// holder died) until ctx ends.
func (m *Member) takeOver(ctx context.Context, w *loop.Worker) {
	m.leases.Expired(ctx, "conv.*", func(key string) {
		id := strings.TrimPrefix(key, "conv.")
		m.logger.Info("taking over a conversation whose crew process stopped renewing its lease", "conversation", id)
		w.TakeOver(id)
	})
}

// lead runs the Singletons while this process holds the leader lease:
// start starts them and returns what stops them. Until ctx ends, a
// standby tries to take the lease every second, and a leader that loses
// it stops them and becomes a standby.
func (m *Member) lead(ctx context.Context, start func(ctx context.Context) (stop func(), err error)) {
	for ctx.Err() == nil {
		l, err := m.leases.Acquire(ctx, "leader", m.desc, LeaseTTL)
		if err == nil {
			m.logger.Info("leading the cluster's crew processes: scheduler, approval sweep, day end, budget sweep, team runtime and Telegram run here")
			lctx, cancel := context.WithCancel(ctx)
			stop, serr := start(lctx)
			if serr != nil {
				m.logger.Error("the Singletons did not start; giving the lead up", "err", serr)
			} else {
				select {
				case <-l.Lost():
					m.logger.Error("lost the leader lease (the cluster was unreachable for its whole TTL); a standby leads now")
				case <-ctx.Done():
				}
				stop()
			}
			cancel()
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			l.Release(rctx)
			rcancel()
		} else if held := (*events.HeldError)(nil); !errors.As(err, &held) && ctx.Err() == nil {
			m.logger.Warn("cannot ask for the leader lease", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// Singletons are what runs on one crew process at a time: started on
// the leader (or at once without a cluster), stopped (Stop) in reverse
// order of Add.
type Singletons struct {
	mu    sync.Mutex
	stops []func()
}

// Add adds what stops one of them.
func (s *Singletons) Add(stop func()) {
	s.mu.Lock()
	s.stops = append(s.stops, stop)
	s.mu.Unlock()
}

// Stop stops them, the last added first; a second Stop stops nothing.
func (s *Singletons) Stop() {
	s.mu.Lock()
	stops := s.stops
	s.stops = nil
	s.mu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
}

// adoptEvery is how often a process looks for conversations with work
// that nobody holds: the expiry watch may miss a marker (a watch reset
// under load), and a trigger may be lost with the process it reached.
const adoptEvery = 10 * time.Second

// adopt takes over, now and then, the conversations the projections show
// running or with messages waiting that no process holds a lease on.
// One waiting on the owner (an approval, a question) is left alone.
func (m *Member) adopt(ctx context.Context, db *bbolt.DB, w *loop.Worker) {
	t := time.NewTicker(m.adoptEvery)
	defer t.Stop()
	var lastErr error
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ids, err := projections.Recoverable(db)
		if err != nil {
			// A conversation left with work stays so until a look
			// succeeds: said, counted, and tried again next tick.
			m.mu.Lock()
			m.stats.AdoptFailures++
			m.stats.LastAdoptError = err.Error()
			m.mu.Unlock()
			m.logger.Warn("cannot list the conversations with work to adopt; trying again", "every", m.adoptEvery, "err", err)
			continue
		}
		var unread []string
		for _, id := range ids {
			c, err := projections.GetConversation(db, id)
			if err != nil || len(c.PendingApprovals) > 0 || c.PendingQuestion != nil ||
				c.Status != projections.ConversationRunning && c.Queued == 0 {
				continue
			}
			_, held, err := m.leases.Holder(ctx, "conv."+id)
			if err != nil && ctx.Err() == nil {
				unread, lastErr = append(unread, id), err
			}
			if err != nil || held {
				continue
			}
			m.logger.Info("taking over a conversation with work that no crew process holds", "conversation", id)
			w.TakeOver(id)
		}
		if len(unread) > 0 {
			// Their leases could not be read: asked again next tick.
			m.logger.Warn("cannot read the leases of conversations with work; trying again", "conversations", len(unread), "first", unread[0], "err", lastErr)
		}
	}
}
