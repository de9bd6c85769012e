package loop

import (
	"context"
	"errors"
)

// Several crew processes may share one NATS cluster (R-ES-8). Each then
// runs a conversation only while it holds the conversation's lease: every
// process sees every trigger, and the one that takes the lease runs the
// pass; the others drop it. The lease is an efficiency, not the safety:
// appends still expect the conversation's last sequence (R-ES-3), so a
// process that lost its lease cannot interleave a turn.

// ErrClaimed says another live process holds the conversation's lease and
// runs it.
var ErrClaimed = errors.New("conversation is run by another crew process")

// Claim is this process's hold on a conversation.
type Claim interface {
	// Lost is closed when the hold could not be renewed: the pass stops.
	Lost() <-chan struct{}
	// Release gives the conversation back: its passes are done.
	Release()
	// Abandon stops renewing without giving it back: the pass was cut (the
	// process is stopping), so the hold expires and another process takes
	// the run over as after a crash.
	Abandon()
}

// Claimer takes the conversation for this process, or fails with
// ErrClaimed (wrapped) when another process holds it.
type Claimer func(ctx context.Context, conversation string) (Claim, error)

// TakeOver runs a pass over a conversation whose holder died (its lease
// expired): a run it was working on is resumed as after a crash, its calls
// in flight closed as interrupted (R-REL-2).
func (w *Worker) TakeOver(id string) {
	w.mu.Lock()
	if w.ctx.Err() == nil {
		w.restarted[id] = true
	}
	w.mu.Unlock()
	w.Kick(id)
}

// claim takes id for the passes about to run: ctx ends when the hold is
// lost. ok is false when another process runs id (nothing to do here) or
// the claim failed (retried later).
func (w *Worker) claim(id string) (ctx context.Context, done func(cut bool), ok bool) {
	if w.cfg.Claim == nil {
		return w.ctx, func(bool) {}, true
	}
	c, err := w.cfg.Claim(w.ctx, id)
	if errors.Is(err, ErrClaimed) {
		w.mu.Lock()
		delete(w.restarted, id) // its holder resumes it; if that one dies, the expiry says so
		w.mu.Unlock()
		return nil, nil, false
	}
	if err != nil {
		if w.ctx.Err() == nil {
			w.cfg.Logger.Error("cannot take the conversation's lease; retrying", "conversation", id, "err", err)
			w.retryLater(id, w.retryDelay(1))
		}
		return nil, nil, false
	}
	ctx, cancel := context.WithCancel(w.ctx)
	stop := make(chan struct{})
	go func() {
		select {
		case <-c.Lost():
			w.cfg.Logger.Warn("lost the conversation's lease; another process takes it over", "conversation", id)
			cancel()
		case <-stop:
		}
	}()
	return ctx, func(cut bool) {
		close(stop)
		cancel()
		if cut {
			c.Abandon()
		} else {
			c.Release()
		}
	}, true
}
