package loop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
)

// Safe restarts (R-X-4): a failing pass is retried after a growing pause,
// a turn failing again and again is closed as poisoned, a run cut twice
// by a restart is closed as interrupted, and a conversation whose log
// this build cannot read is parked.
const (
	// MaxFailedPasses is how many passes in a row may fail before the run
	// is finished failed (reason "poisoned").
	MaxFailedPasses = 3
	// MaxResumes is how many times a run cut by a restart is taken up
	// again; the next cut closes it (reason "interrupted").
	MaxResumes = 1
)

// Reasons of runs the worker closes.
const (
	ReasonPoisoned    = "poisoned"
	ReasonInterrupted = view.ReasonInterrupted
)

// RetryDelay is the pause before retrying a conversation whose pass failed
// n times in a row: 1 s, doubling, at most 30 s.
func RetryDelay(n int) time.Duration {
	d := time.Second
	for i := 1; i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// Parked is a conversation the worker will not run: an event of its log
// cannot be decoded by this build (written by a newer one, or damaged).
// Subject and Seq name the event.
type Parked struct {
	Conversation string `json:"conversation"`
	Subject      string `json:"subject"`
	Seq          uint64 `json:"seq"`
	Error        string `json:"error"`
}

// Parked reports whether conversation is parked, and why.
func (w *Worker) Parked(conversation string) (Parked, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.parked[conversation]
	return p, ok
}

// safePass runs one pass. A panic in it (a tool's, a provider's) is that
// pass failing, counted like any other, not the server dying with every
// conversation: the conversation's state is read again from the log,
// since the panic may have cut a change to it half-way.
func (w *Worker) safePass(ctx context.Context, id string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			w.cfg.Logger.Error("turn panicked", "conversation", id, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("the turn panicked: %v", r)
			if rerr := w.cfg.Convs.reload(w.ctx, id); rerr != nil {
				err = fmt.Errorf("%w; reading its state again failed: %w", err, rerr)
			}
		}
	}()
	return w.pass(ctx, id)
}

// reload reads a loaded conversation's state again from the log (its
// snapshot and tail), replacing what is in memory; on failure the old
// state stays and the error is returned.
func (cs *Convs) reload(ctx context.Context, id string) error {
	cs.mu.Lock()
	c := cs.convs[id]
	cs.mu.Unlock()
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.notify()
	if c.st == nil {
		return nil
	}
	st, err := loadState(ctx, cs.log, cs.snaps, id, cs.logger)
	if err != nil {
		return err
	}
	c.st = st
	return nil
}

// failed handles a pass that returned err: park an unreadable
// conversation, close a run that failed MaxFailedPasses times in a row,
// else retry after RetryDelay (retry: one is scheduled).
func (w *Worker) failed(id string, err error) (retry bool) {
	// Every failed pass is counted (Stats, /healthz, doctor) and logged
	// with its error, whatever happens next.
	w.failedPasses.Add(1)
	// Only an event of this conversation parks it (a delegate's child
	// failing to load is a failure of this pass like any other).
	var de *events.DecodeError
	if errors.As(err, &de) && events.ScopeOf(de.Subject) == events.Conv(id) {
		p := Parked{Conversation: id, Subject: de.Subject, Seq: de.Seq, Error: de.Error()}
		w.mu.Lock()
		w.parked[id] = p
		delete(w.failures, id)
		w.mu.Unlock()
		w.cfg.Logger.Error("conversation parked: its log cannot be read by this build; upgrade crew or repair the event",
			"conversation", id, "subject", p.Subject, "seq", p.Seq, "err", err)
		return false
	}
	w.mu.Lock()
	w.failures[id]++
	n := w.failures[id]
	w.mu.Unlock()
	w.cfg.Logger.Warn("turn pass failed", "conversation", id, "failures_in_a_row", n, "err", err)
	if n >= MaxFailedPasses {
		perr := w.poison(id, n, err)
		if perr == nil {
			w.mu.Lock()
			delete(w.failures, id)
			w.mu.Unlock()
			w.cfg.Logger.Error("turn failed too often; its run was closed as failed", "conversation", id, "failures", n, "err", err)
			return false
		}
		err = fmt.Errorf("%w; closing the run failed too: %w", err, perr)
	}
	d := w.retryDelay(n)
	w.cfg.Logger.Warn("turn pass to be retried", "conversation", id, "failures_in_a_row", n, "in", d)
	w.retryLater(id, d)
	return true
}

func (w *Worker) retryDelay(n int) time.Duration {
	if w.cfg.RetryDelay != nil {
		return w.cfg.RetryDelay(n)
	}
	return RetryDelay(n)
}

// retryLater kicks id after d, on a timer the worker owns: Close stops it
// and waits for it.
func (w *Worker) retryLater(id string, d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx.Err() != nil || w.retrying[id] {
		return
	}
	w.retrying[id] = true
	w.wg.Go(func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-w.ctx.Done():
		case <-t.C:
		}
		w.mu.Lock()
		delete(w.retrying, id)
		w.mu.Unlock()
		w.Kick(id)
	})
}

// poison finishes the conversation's open run (or, with none open, a run
// started on the messages waiting) as failed, saying why; it is not
// retried until a new message comes.
func (w *Worker) poison(id string, n int, cause error) error {
	ctx := w.ctx
	conv, err := w.cfg.Convs.Get(ctx, id)
	if err != nil {
		return err
	}
	runID := w.cfg.Deps.Clock.NewID()
	msg := fmt.Sprintf("the turn failed %d times in a row, so it was stopped: %s", n, oneLine(cause))
	_, err = conv.Append(ctx, func(st *State) ([]events.Event, error) {
		return closeRun(st, runID, ReasonPoisoned, msg,
			"Not run: this turn kept failing and was stopped. Nothing was run and nothing changed."), nil
	})
	return err
}

// takeRestarted reports (once) whether id was found open by the recovery
// scan at start.
func (w *Worker) takeRestarted(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.restarted[id]
	delete(w.restarted, id)
	return r
}

// resumeAfterRestart runs before the first pass over a conversation the
// recovery scan found after a crash: a run that was working when the
// server died (not one paused on an approval or a question) is recorded as resumed
// (run_resumed), or, when it was resumed MaxResumes times already, closed
// as interrupted. After a clean stop it does nothing.
func (w *Worker) resumeAfterRestart(ctx context.Context, conv *Conv) error {
	if w.cfg.CleanStart {
		return nil
	}
	_, err := conv.Append(ctx, func(st *State) ([]events.Event, error) {
		if st.OpenRun == "" || st.Closed || st.PendingApproval() != nil || st.PendingQuestion() != nil {
			return nil, nil
		}
		if st.stopDue() { // stopped before the crash: closed stopped, not resumed
			return nil, nil
		}
		if st.Resumed >= MaxResumes {
			return closeRun(st, "", ReasonInterrupted,
				fmt.Sprintf("the server stopped %d times while this run was working (a crash or a kill), so it was closed instead of being resumed again; send a message to try again", st.Resumed+1),
				"Not run: the run was closed after the server stopped in its middle again. Nothing was run and nothing changed."), nil
		}
		return []events.Event{&events.RunResumed{RunID: st.OpenRun, Step: st.Step}}, nil
	})
	return err
}

// closeRun returns the events that finish st's open run as failed with
// reason and errText — with no run open, a run started for the messages
// waiting (runID), none if none wait. Every call of the last reply gets a
// result first (notRun, or interrupted for a call that had started), so
// the history stays one a model accepts.
func closeRun(st *State, runID, reason, errText, notRun string) []events.Event {
	var evs []events.Event
	open := st.OpenRun
	if open == "" {
		if len(st.Queued) == 0 || runID == "" {
			return nil
		}
		evs = append(evs, delegated(st, &events.RunStarted{RunID: runID, Agent: cmp.Or(st.Agent, "unknown"), Trigger: "message"}))
		open = runID
	} else {
		for _, c := range st.UnansweredCalls() {
			text, outcome := notRun, "blocked"
			if st.Calling[c.ID] {
				text, outcome = interruptedText, "interrupted"
			}
			evs = append(evs, &events.ToolCompleted{RunID: open, Step: st.Step, CallID: c.ID, Tool: c.Name, Output: text, IsError: true, Outcome: outcome})
		}
	}
	return append(evs, &events.RunFinished{RunID: open, Status: events.RunFailed, Reason: reason, Error: errText})
}
