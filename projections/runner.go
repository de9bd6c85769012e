package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/nats-io/nats.go/jetstream"
	"go.etcd.io/bbolt"
)

// Runner feeds projections from their durable consumers, one goroutine
// each, until Close.
type Runner struct {
	log    *events.Log
	db     *bbolt.DB
	logger *slog.Logger
	cfg    config
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	changed chan struct{} // closed and replaced whenever a worker's state changes
	workers []*worker
}

// worker is one projection's state. Fields after p are guarded by
// Runner.mu.
type worker struct {
	p    Projection
	cons jetstream.Consumer

	checkpoint uint64
	running    bool
	skipped    uint64
	err        error
}

// config holds what tests change.
type config struct {
	// ackWait of the consumers; zero is the server default (30s).
	ackWait time.Duration
	// afterCommit runs between commit and ack; an error means the ack is
	// lost (as if the process died there): the message is not acknowledged.
	afterCommit func(name string, seq uint64) error
}

// Status is one projection's progress, for `crew doctor` and /healthz.
type Status struct {
	Name       string `json:"name"`
	Checkpoint uint64 `json:"checkpoint"` // last stream sequence applied
	LastSeq    uint64 `json:"last_seq"`   // the stream's last sequence
	Lag        uint64 `json:"lag"`        // LastSeq - Checkpoint
	Running    bool   `json:"running"`
	// Skipped counts redelivered events skipped since Open (already
	// applied: a lost ack).
	Skipped uint64 `json:"skipped"`
	// Error says why the projection stopped; ErrorSubject and ErrorSeq
	// name the event it stopped at, when there is one.
	Error        string `json:"error,omitempty"`
	ErrorSubject string `json:"error_subject,omitempty"`
	ErrorSeq     uint64 `json:"error_seq,omitempty"`
}

// Open starts one durable consumer ("proj_<name>", all of "crew.>",
// explicit acks) and one goroutine per projection. A consumer out of step
// with the projection's checkpoint is recreated to start after the
// checkpoint. A projection whose checkpoint is beyond the stream's end is
// not started; Status reports it.
func Open(ctx context.Context, log *events.Log, db *bbolt.DB, logger *slog.Logger, ps ...Projection) (*Runner, error) {
	return open(ctx, log, db, logger, config{}, ps...)
}

func open(ctx context.Context, log *events.Log, db *bbolt.DB, logger *slog.Logger, cfg config, ps ...Projection) (*Runner, error) {
	if err := validate(ps); err != nil {
		return nil, fmt.Errorf("open projections: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	info, err := log.Stream().Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("open projections: stream info: %w", err)
	}
	last := info.State.LastSeq
	// A conversation parked at an event an older build could not read is
	// read again in full once this build can.
	again, err := readable(ctx, log, db)
	if err != nil {
		return nil, fmt.Errorf("open projections: %w", err)
	}
	if again {
		logger.Info("events an older build could not decode are readable now; rebuilding the projections")
		if err := forgetUndecodable(db); err != nil {
			return nil, fmt.Errorf("open projections: %w", err)
		}
		for _, p := range ps {
			if err := Rebuild(ctx, log, db, p); err != nil {
				return nil, fmt.Errorf("open projections: %w", err)
			}
		}
	}
	r := &Runner{log: log, db: db, logger: logger, cfg: cfg, changed: make(chan struct{})}
	for _, p := range ps {
		w := &worker{p: p}
		r.workers = append(r.workers, w)
		if w.checkpoint, err = Checkpoint(db, p.Name()); err != nil {
			return nil, fmt.Errorf("open projections: %w", err)
		}
		if w.checkpoint > last {
			r.fail(w, fmt.Errorf("checkpoint %d is beyond the stream's last sequence %d (another home's database?): rebuild the projection", w.checkpoint, last))
			continue
		}
		if w.cons, err = r.consumer(ctx, p.Name(), w.checkpoint); err != nil {
			return nil, fmt.Errorf("open projections: %w", err)
		}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	for _, w := range r.workers {
		if w.cons == nil {
			continue
		}
		w.running = true
		r.wg.Go(func() { r.run(runCtx, w) })
	}
	return r, nil
}

// consumer returns the durable consumer of projection name, recreated to
// start at checkpoint+1 unless its ack floor is the checkpoint with nothing
// pending.
func (r *Runner) consumer(ctx context.Context, name string, checkpoint uint64) (jetstream.Consumer, error) {
	stream, durable := r.log.Stream(), consumerName(name)
	cons, err := stream.Consumer(ctx, durable)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
	case err != nil:
		return nil, fmt.Errorf("consumer %s: %w", durable, err)
	default:
		info := cons.CachedInfo()
		if info.AckFloor.Stream == checkpoint && info.NumAckPending == 0 &&
			info.Config.FilterSubject == allEvents && info.Config.AckPolicy == jetstream.AckExplicitPolicy {
			return cons, nil
		}
		r.logger.Info("projection consumer out of step with its checkpoint; recreating it",
			logProjection, name, "ack_floor", info.AckFloor.Stream, "ack_pending", info.NumAckPending, "checkpoint", checkpoint)
		if err := stream.DeleteConsumer(ctx, durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("delete consumer %s: %w", durable, err)
		}
	}
	cfg := jetstream.ConsumerConfig{
		Durable:       durable,
		Description:   "projection " + name,
		FilterSubject: allEvents,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       r.cfg.ackWait,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	if checkpoint > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, checkpoint+1
	}
	cons, err = stream.CreateConsumer(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create consumer %s from %d: %w", durable, checkpoint+1, err)
	}
	return cons, nil
}

// allEvents is every projection's filter.
const allEvents = events.Root + ".>"

// Log attribute keys.
const (
	logProjection = "projection"
	logSubject    = "subject"
	logSeq        = "seq"
	logErr        = "err"
)

func (r *Runner) run(ctx context.Context, w *worker) {
	msgs, err := w.cons.Messages()
	if err != nil {
		r.fail(w, fmt.Errorf("consume: %w", err))
		return
	}
	defer msgs.Stop()
	for {
		msg, err := msgs.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				r.stopped(w)
				return
			}
			// Next retries transient trouble (missed heartbeats,
			// reconnects) itself; what it returns is terminal, such as
			// the consumer being deleted under us.
			r.fail(w, fmt.Errorf("consume %s: %w", consumerName(w.p.Name()), err))
			return
		}
		if err := r.handle(w, msg); err != nil {
			r.fail(w, err)
			return
		}
	}
}

// handle applies one message (or skips a redelivery) and acks it after the
// commit. An error stops the projection without acking.
func (r *Runner) handle(w *worker, msg jetstream.Msg) error {
	meta, err := msg.Metadata()
	if err != nil {
		return &ApplyError{Projection: w.p.Name(), Subject: msg.Subject(), Err: fmt.Errorf("message metadata: %w", err)}
	}
	seq, name := meta.Sequence.Stream, w.p.Name()
	applied := false
	err = r.db.Update(func(tx *bbolt.Tx) error {
		cp, err := readCheckpoint(tx, name)
		if err != nil {
			return &ApplyError{Projection: name, Subject: msg.Subject(), Seq: seq, Err: err}
		}
		if seq <= cp {
			return nil
		}
		env, err := events.DecodeStored(msg.Subject(), seq, msg.Data())
		if de := (*events.DecodeError)(nil); errors.As(err, &de) {
			if err := skipUndecodable(tx, w.p, de); err != nil {
				return err
			}
			applied = true
			return nil
		}
		if err != nil {
			return err
		}
		if err := applyEvent(tx, w.p, env); err != nil {
			return err
		}
		applied = true
		return nil
	})
	if err != nil {
		return err
	}
	r.mu.Lock()
	if applied {
		w.checkpoint = seq
	} else {
		w.skipped++
	}
	r.notifyLocked()
	r.mu.Unlock()
	if applied && r.cfg.afterCommit != nil {
		if err := r.cfg.afterCommit(name, seq); err != nil {
			r.logger.Warn("ack lost after commit", logProjection, name, logSeq, seq, logErr, err)
			return nil
		}
	}
	if err := msg.Ack(); err != nil {
		// Harmless: the redelivery will be skipped.
		r.logger.Warn("ack failed; the redelivery will be skipped", logProjection, name, logSeq, seq, logErr, err)
	}
	return nil
}

// fail stops w with err and logs it, once.
func (r *Runner) fail(w *worker, err error) {
	r.mu.Lock()
	w.running, w.err = false, err
	r.notifyLocked()
	r.mu.Unlock()
	subject, seq := errorEvent(err)
	r.logger.Error("projection stopped", logProjection, w.p.Name(), logSubject, subject, logSeq, seq, logErr, err)
}

// stopped marks w stopped by Close.
func (r *Runner) stopped(w *worker) {
	r.mu.Lock()
	w.running = false
	r.notifyLocked()
	r.mu.Unlock()
}

func (r *Runner) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// errorEvent returns the subject and sequence an error is about, if any.
func errorEvent(err error) (string, uint64) {
	var ae *ApplyError
	if errors.As(err, &ae) {
		return ae.Subject, ae.Seq
	}
	var de *events.DecodeError
	if errors.As(err, &de) {
		return de.Subject, de.Seq
	}
	return "", 0
}

// Ready reports whether every projection has applied stream sequence seq
// and none has stopped, with every projection's Status.
func (r *Runner) Ready(ctx context.Context, seq uint64) (bool, []Status) {
	statuses := r.Status(ctx)
	ready := true
	for _, s := range statuses {
		if s.Checkpoint < seq || s.Error != "" {
			ready = false
		}
	}
	return ready, statuses
}

// Status reports every projection's progress. If the stream cannot be
// asked for its last sequence, LastSeq and Lag are 0 and Error says so
// (unless the projection has stopped for another reason).
func (r *Runner) Status(ctx context.Context) []Status {
	var last uint64
	info, streamErr := r.log.Stream().Info(ctx)
	if streamErr == nil {
		last = info.State.LastSeq
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Status, 0, len(r.workers))
	for _, w := range r.workers {
		s := Status{Name: w.p.Name(), Checkpoint: w.checkpoint, LastSeq: last, Running: w.running, Skipped: w.skipped}
		if last > w.checkpoint {
			s.Lag = last - w.checkpoint
		}
		switch {
		case w.err != nil:
			s.Error = w.err.Error()
			s.ErrorSubject, s.ErrorSeq = errorEvent(w.err)
		case streamErr != nil:
			s.Error = fmt.Sprintf("stream info: %v", streamErr)
		}
		out = append(out, s)
	}
	return out
}

// WaitFor blocks until every projection has applied stream sequence seq,
// for read-your-writes after an append. It fails at once with ErrStopped if
// a projection behind seq has stopped, and with ErrClosed after Close.
func (r *Runner) WaitFor(ctx context.Context, seq uint64) error {
	var behind string
	var at uint64
	err := r.waitUntil(ctx, func() (bool, error) {
		behind = ""
		for _, w := range r.workers {
			if w.checkpoint >= seq {
				continue
			}
			behind, at = w.p.Name(), w.checkpoint
			switch {
			case w.err != nil:
				return false, fmt.Errorf("%w: %w", ErrStopped, w.err)
			case r.closed || !w.running:
				return false, ErrClosed
			}
		}
		return behind == "", nil
	})
	if err != nil {
		return fmt.Errorf("wait for seq %d: %s at %d: %w", seq, behind, at, err)
	}
	return nil
}

// waitUntil calls done under r.mu whenever a worker's state changes, until
// it reports true or an error, or ctx ends.
func (r *Runner) waitUntil(ctx context.Context, done func() (bool, error)) error {
	for {
		r.mu.Lock()
		changed := r.changed
		ok, err := done()
		r.mu.Unlock()
		if ok || err != nil {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close stops the goroutines and waits for them (bounded by ctx). The
// consumers stay: the next Open resumes them.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.notifyLocked()
	r.mu.Unlock()
	r.cancel()
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close projections: %w", ctx.Err())
	}
}
