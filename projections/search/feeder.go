package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/my-agent-crew/crew/events"
)

// batchMax caps the events of one bleve batch: catching up fills it, a
// live event goes alone. The heap a catch-up holds grows with it (the
// analysed documents of one batch, ≈ 9 MB at 2,000 events of short
// messages and replies).
const batchMax = 500

// Feeder keeps an Index up with the log in the background: it never holds
// a request, and a failing event stops it (Status says where) without
// touching the other projections.
type Feeder struct {
	x      *Index
	log    *events.Log
	logger *slog.Logger
	redact func(string) string
	// embed is told the documents each batch indexed or deleted.
	embed func(indexed, deleted []string)

	// after, when set, is waited for before the catch-up starts.
	after func(context.Context) error

	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	changed    chan struct{}
	checkpoint uint64
	running    bool
	err        error
}

// FeederStatus is the feeder's progress, for doctor and /healthz.
type FeederStatus struct {
	Checkpoint uint64 `json:"checkpoint"`
	Running    bool   `json:"running"`
	Error      string `json:"error,omitempty"`
}

// Redactor is what the feeder redacts with (the log's, Log.Redactor()).
type Redactor interface{ String(string) string }

// Start catches x up with log from its checkpoint and follows it until
// Close. It returns at once.
func Start(x *Index, log *events.Log, red Redactor, logger *slog.Logger) (*Feeder, error) {
	return StartAfter(x, log, red, logger, nil)
}

// StartAfter is Start that begins catching up once after returns (serve
// lets the projections catch up first, so the two catch-ups never hold
// their memory at once); an error from after other than the feeder's
// own closing is logged and the catch-up begins anyway.
func StartAfter(x *Index, log *events.Log, red Redactor, logger *slog.Logger, after func(context.Context) error) (*Feeder, error) {
	cp, err := x.Checkpoint()
	if err != nil {
		return nil, fmt.Errorf("search index: checkpoint: %w", err)
	}
	f := &Feeder{x: x, log: log, logger: logger, after: after, changed: make(chan struct{}), checkpoint: cp, running: true, done: make(chan struct{})}
	if red != nil {
		f.redact = red.String
	}
	if x.vec != nil {
		f.embed = x.vec.enqueue
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	go func() {
		defer close(f.done)
		err := f.run(ctx)
		f.mu.Lock()
		f.running = false
		if err != nil && ctx.Err() == nil {
			f.err = err
			logger.Error("search index stopped", "err", err)
		}
		f.notifyLocked()
		f.mu.Unlock()
	}()
	return f, nil
}

type delivery struct {
	env events.Envelope
	err error
}

func (f *Feeder) run(ctx context.Context) error {
	if f.after != nil {
		if err := f.after(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			f.logger.Warn("search index: catching up without waiting", "err", err)
		}
	}
	from := f.checkpoint + 1
	for {
		next, err := f.follow(ctx, from)
		if err != nil || ctx.Err() != nil {
			return err
		}
		from = next
	}
}

// follow applies the log from sequence from on until ctx ends, or until an
// event this build cannot decode, which it passes (returning the sequence
// after it) as the other projections do.
func (f *Feeder) follow(ctx context.Context, from uint64) (uint64, error) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	ch := make(chan delivery, batchMax)
	go func() {
		defer close(ch)
		for env, err := range f.log.Follow(ctx, events.Root+".>", from) {
			select {
			case ch <- delivery{env, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		stop()
		for range ch {
		}
	}()
	for {
		var d delivery
		var ok bool
		select {
		case d, ok = <-ch:
		case <-ctx.Done():
			return 0, nil
		}
		if !ok {
			return 0, ctx.Err()
		}
		envs := []events.Envelope{}
		var last error
		if d.err != nil {
			last = d.err
		} else {
			envs = append(envs, d.env)
		}
	fill:
		for last == nil && len(envs) < batchMax {
			select {
			case d, ok := <-ch:
				if !ok {
					break fill
				}
				if d.err != nil {
					last = d.err
				} else {
					envs = append(envs, d.env)
				}
			default:
				break fill
			}
		}
		if len(envs) > 0 {
			if err := f.applyBatch(envs); err != nil {
				return 0, err
			}
		}
		if last != nil {
			if de := (*events.DecodeError)(nil); errors.As(last, &de) {
				if err := f.pass(de.Seq); err != nil {
					return 0, err
				}
				return de.Seq + 1, nil
			}
			if ctx.Err() != nil {
				return 0, nil
			}
			return 0, fmt.Errorf("search index: follow the log: %w", last)
		}
	}
}

func (f *Feeder) applyBatch(envs []events.Envelope) error {
	b := f.x.newBatch(f.redact)
	for _, env := range envs {
		if err := b.apply(env); err != nil {
			return fmt.Errorf("search index: %s seq %d: %w", env.Subject, env.Seq, err)
		}
	}
	last := envs[len(envs)-1].Seq
	if err := b.commit(last); err != nil {
		return err
	}
	if f.embed != nil {
		f.embed(b.indexed, b.deleted)
	}
	f.advance(last)
	return nil
}

// pass moves the checkpoint over an event this build cannot read.
func (f *Feeder) pass(seq uint64) error {
	b := f.x.newBatch(f.redact)
	if err := b.commit(seq); err != nil {
		return err
	}
	f.advance(seq)
	return nil
}

func (f *Feeder) advance(seq uint64) {
	f.mu.Lock()
	f.checkpoint = seq
	f.notifyLocked()
	f.mu.Unlock()
}

func (f *Feeder) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Status reports the feeder's progress.
func (f *Feeder) Status() FeederStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := FeederStatus{Checkpoint: f.checkpoint, Running: f.running}
	if f.err != nil {
		s.Error = f.err.Error()
	}
	return s
}

// WaitFor blocks until the index has applied stream sequence seq.
func (f *Feeder) WaitFor(ctx context.Context, seq uint64) error {
	for {
		f.mu.Lock()
		cp, running, err, changed := f.checkpoint, f.running, f.err, f.changed
		f.mu.Unlock()
		switch {
		case cp >= seq:
			return nil
		case err != nil:
			return fmt.Errorf("search index stopped at %d: %w", cp, err)
		case !running:
			return fmt.Errorf("search index closed at %d", cp)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("search index at %d, waiting for %d: %w", cp, seq, ctx.Err())
		}
	}
}

// Close stops the feeder and waits for it.
func (f *Feeder) Close() {
	f.cancel()
	<-f.done
}

// Rebuild empties the index under dir and indexes the whole log again,
// up to its last event when called. Run it with no Feeder on that dir (a
// stopped home).
func Rebuild(ctx context.Context, dir string, log *events.Log, red Redactor) (uint64, error) {
	if err := Remove(dir); err != nil {
		return 0, err
	}
	x, err := Open(dir)
	if err != nil {
		return 0, err
	}
	defer x.Close()
	redact := func(s string) string { return s }
	if red != nil {
		redact = red.String
	}
	var last uint64
	var ids []string
	for from, more := uint64(1), true; more; {
		more = false
		b := x.newBatch(redact)
		n := 0
		for env, err := range log.Read(ctx, events.Root+".>", from) {
			if de := (*events.DecodeError)(nil); errors.As(err, &de) {
				last, from, more = de.Seq, de.Seq+1, true
				break
			}
			if err != nil {
				return last, fmt.Errorf("rebuild search: %w", err)
			}
			if err := b.apply(env); err != nil {
				return last, fmt.Errorf("rebuild search: %s seq %d: %w", env.Subject, env.Seq, err)
			}
			last = env.Seq
			if n++; n == batchMax {
				if err := b.commit(last); err != nil {
					return last, err
				}
				ids = append(ids, b.indexed...)
				b, n = x.newBatch(redact), 0
			}
		}
		if err := b.commit(last); err != nil {
			return last, err
		}
		ids = append(ids, b.indexed...)
	}
	slices.Sort(ids)
	return last, requeue(dir, slices.Compact(ids))
}
