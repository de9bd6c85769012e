package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/refusal"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/tools/kit"
)

// The owner's stop (issue 27). A stop is an event first
// (run_stop_requested, stored by Worker.Stop), then takes effect: the
// conversation's running pass is cancelled with ErrStopped as its cause
// (the model's request at once, a tool's process group SIGTERM then SIGKILL
// after StopGrace, a delegate's wait), what was in flight is recorded as
// stopped, and the next pass closes the run (closeStopped): pending
// approvals withdrawn, pending questions withdrawn, every call of the last
// reply closed "stopped", run_finished stopped, then the owner's Stop hook. The model is not called
// again in that run. A crash after the stop was stored closes the run the
// same way on restart (State.Stop), never resumes it.

// StopGrace is how long a stopped tool's process group has between
// SIGTERM and SIGKILL.
const StopGrace = 3 * time.Second

// ErrNothingRunning: a stop of a conversation with no open run and no
// message waiting (HTTP 409 nothing_running).
var ErrNothingRunning = refusal.ErrNothingRunning

// ErrBadScope: a stop's scope is none of run, queue, all.
var ErrBadScope = refusal.ErrBadScope

// ErrStopped is the cause a stopped pass's context is cancelled with.
// Tools that start processes read its TermGrace (tools/shell).
var ErrStopped error = stopError{}

type stopError struct{}

func (stopError) Error() string { return "stopped by the owner" }

// TermGrace is the time between SIGTERM and SIGKILL for a stopped
// command's process group.
func (stopError) TermGrace() time.Duration { return StopGrace }

// stopped says ctx was cancelled by the owner's stop.
func stopped(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrStopped)
}

// Result texts of a stop.
const (
	stoppedNotRun  = "Stopped: the owner stopped this run before this call ran. It was not run and nothing changed."
	stoppedRunning = "Stopped: the owner stopped this run while this call was running; it was cut off."
	// A call whose approval or question was pending: the card says
	// "withdrawn — run stopped".
	withdrawnApproval = "Withdrawn — run stopped: the owner stopped this run while this call waited for approval. It was not run and nothing changed."
	withdrawnQuestion = "Withdrawn — run stopped: the owner stopped this run before the question was answered."
)

// Stopped is what Worker.Stop did (view.Stopped, which the web gateway
// decodes).
type Stopped = view.Stopped

// ValidStopBy says whether by names a channel a stop may come from.
func ValidStopBy(by string) bool {
	return slices.Contains([]string{events.StopByWeb, events.StopByAPI, events.StopByTelegram, events.StopByCLI, events.StopByMCP}, by)
}

// Stop stores the owner's stop of conversation and makes it take effect at
// once: scope run stops the open run, the delegated children under it and
// the conversation's background tasks still running, queue drops the
// messages waiting, all does both ("" is all). A conversation with nothing
// of the scope to stop is ErrNothingRunning and nothing is stored. A second stop of a run already stopping stores
// nothing more for the run.
func (w *Worker) Stop(ctx context.Context, conversation, scope, by string) (Stopped, error) {
	if scope == "" {
		scope = events.StopAll
	}
	if scope != events.StopRun && scope != events.StopQueue && scope != events.StopAll {
		return Stopped{}, fmt.Errorf("%w: %q; want run, queue or all", ErrBadScope, scope)
	}
	if !ValidStopBy(by) {
		return Stopped{}, fmt.Errorf("%w: stopped by %q", ErrBadScope, by)
	}
	conv, err := w.cfg.Convs.Get(ctx, conversation)
	if err != nil {
		return Stopped{}, err
	}
	var out Stopped
	var children []string
	_, err = conv.Append(ctx, func(st *State) ([]events.Event, error) {
		out, children = Stopped{}, nil
		e := &events.RunStopRequested{By: by, Scope: scope}
		stopping := st.Stop != nil && st.Stop.RunID == st.OpenRun
		if scope != events.StopQueue && st.OpenRun != "" {
			out.RunID = st.OpenRun
			if !stopping {
				e.RunID = st.OpenRun
			}
			for _, c := range st.UnansweredCalls() {
				if st.Calling[c.ID] && c.Name == DelegateTool {
					children = append(children, ChildID(conversation, c.ID))
				}
			}
		}
		if scope != events.StopQueue {
			for _, id := range st.RunningTasks() {
				if st.Tasks[id].StopBy == "" {
					e.Tasks = append(e.Tasks, id)
				}
			}
			out.Tasks = e.Tasks
		}
		if scope != events.StopRun {
			for _, p := range st.Queued {
				e.Dropped = append(e.Dropped, p.EventID)
			}
			if scope == events.StopAll {
				for _, p := range st.Steers {
					e.Dropped = append(e.Dropped, p.EventID)
				}
			}
		}
		out.Dropped = len(e.Dropped)
		if out.RunID == "" && out.Dropped == 0 && len(out.Tasks) == 0 {
			return nil, fmt.Errorf("%w: conversation %s has no run open, no background task running and no message waiting", ErrNothingRunning, conversation)
		}
		if e.RunID == "" && len(e.Dropped) == 0 && len(e.Tasks) == 0 {
			return nil, nil // the run is stopping already
		}
		return []events.Event{e}, nil
	})
	if err != nil {
		return Stopped{}, err
	}
	if bg := w.cfg.Deps.Services.Background; bg != nil {
		for _, id := range out.Tasks {
			bg.kill(id, by)
		}
	}
	if out.RunID != "" {
		w.interrupt(conversation)
		// The children under it stop too (a call that is no delegate has
		// no child conversation: nothing to stop there).
		for _, child := range children {
			if _, err := w.Stop(ctx, child, events.StopAll, by); err != nil && !errors.Is(err, ErrNothingRunning) {
				w.cfg.Logger.Error("stop a delegated child", "conversation", child, "err", err)
			}
		}
	}
	w.Kick(conversation)
	return out, nil
}

// ErrNoWaiting: no waiting message at that place in the queue (404).
var ErrNoWaiting = refusal.ErrNoWaiting

// RemoveWaiting drops the n-th message waiting in conversation's queue
// (from 1, in the order the chat shows them): stored as a stop of scope
// queue that drops that one message, never answered.
func (w *Worker) RemoveWaiting(ctx context.Context, conversation string, n int, by string) error {
	if !ValidStopBy(by) {
		return fmt.Errorf("%w: stopped by %q", ErrBadScope, by)
	}
	conv, err := w.cfg.Convs.Get(ctx, conversation)
	if err != nil {
		return err
	}
	_, err = conv.Append(ctx, func(st *State) ([]events.Event, error) {
		if n < 1 || n > len(st.Queued) {
			return nil, fmt.Errorf("%w: %d of %d waiting in %s", ErrNoWaiting, n, len(st.Queued), conversation)
		}
		return []events.Event{&events.RunStopRequested{By: by, Scope: events.StopQueue, Dropped: []string{st.Queued[n-1].EventID}}}, nil
	})
	return err
}

// interrupt cancels conversation's running pass, if one runs here, with
// ErrStopped.
func (w *Worker) interrupt(conversation string) {
	w.mu.Lock()
	cancel := w.stops[conversation]
	w.mu.Unlock()
	if cancel != nil {
		cancel(ErrStopped)
	}
}

// stoppable is ctx for one turn of conversation, cancelled by interrupt;
// done forgets it.
func (w *Worker) stoppable(ctx context.Context, conversation string) (context.Context, func()) {
	tctx, cancel := context.WithCancelCause(ctx)
	w.mu.Lock()
	w.stops[conversation] = cancel
	w.mu.Unlock()
	return tctx, func() {
		w.mu.Lock()
		delete(w.stops, conversation)
		w.mu.Unlock()
		cancel(nil)
	}
}

// Stopping is the stop fold: the owner's stop of the open run, stored
// and not yet taken effect (the next pass closes the run stopped, after a
// crash too).
type Stopping struct {
	Stop *StopRequest `json:"stop,omitempty"`
}

func (f *Stopping) apply(env events.Envelope, on foldOn) {
	switch e := decoded(env).(type) {
	case *events.RunStopRequested:
		if e.RunID != "" && e.RunID == on.open && f.Stop == nil {
			f.Stop = &StopRequest{RunID: e.RunID, By: e.By, Scope: e.Scope, EventID: env.ID, At: env.Time}
		}
	case *events.RunStarted:
		f.Stop = nil
	case *events.RunFinished:
		if on.end != nil {
			f.Stop = nil
		}
	}
}

// stopDue says the open run has a stop to take effect.
func (s *State) stopDue() bool {
	return s.Stop != nil && s.OpenRun != "" && s.Stop.RunID == s.OpenRun
}

// closeStopped closes the open run the owner stopped, in one append:
// pending approvals and questions withdrawn, every call of the last reply
// without a result closed "stopped", run_finished stopped. done: there was
// a stop to close.
func (t *Turn) closeStopped(ctx context.Context) (done bool, err error) {
	if stopped(ctx) {
		// The pass closing the run may be the one the stop cancelled: the
		// close is stored and the owner's Stop hook runs all the same (an
		// append on the cancelled context could store the events and still
		// fail, and the hook was then skipped).
		ctx = context.WithoutCancel(ctx)
	}
	var due bool
	t.conv.View(func(st *State) { due = st.stopDue() })
	if !due {
		return false, nil
	}
	var runID, by string
	stored, err := t.conv.Append(ctx, func(st *State) ([]events.Event, error) {
		if !st.stopDue() {
			return nil, nil
		}
		runID, by = st.OpenRun, st.Stop.By
		return stopEvents(st), nil
	})
	if err != nil || len(stored) == 0 {
		return true, err
	}
	// The owner's Stop hook runs at this end as at any other: it is the
	// owner's own "the run ended" (a notice, a clean-up) and cannot undo
	// the stop (exit code 2 is only recorded).
	_, _, err = t.hook(ctx, runID, 0, kit.Stop, nil, map[string]any{"status": events.RunStopped, "reason": events.StoppedByOwner, "stopped_by": by})
	return true, err
}

// stopEvents are the events that close st's stopped run.
func stopEvents(st *State) []events.Event {
	stop := st.Stop
	var evs []events.Event
	for _, id := range sortedKeys(st.Approvals) {
		if a := st.Approvals[id]; a.Decision == "" {
			evs = append(evs, &events.ApprovalDecided{ApprovalID: a.ID, Decision: events.DecisionWithdrawn, Channel: stop.By})
		}
	}
	for _, id := range sortedKeys(st.Questions) {
		if q := st.Questions[id]; q.Outcome == "" {
			evs = append(evs, &events.QuestionExpired{QuestionID: q.ID, Withdrawn: true})
		}
	}
	for _, c := range st.UnansweredCalls() {
		text, outcome := stoppedNotRun, "stopped"
		switch {
		case st.Calling[c.ID]:
			text = stoppedRunning
		case st.Approvals[c.ID] != nil && (st.Approvals[c.ID].Decision == "" || st.Approvals[c.ID].Decision == events.DecisionWithdrawn):
			text, outcome = withdrawnApproval, "withdrawn"
		case st.Questions[c.ID] != nil && (st.Questions[c.ID].Outcome == "" || st.Questions[c.ID].Outcome == QuestionWithdrawn):
			text, outcome = withdrawnQuestion, "withdrawn"
		}
		evs = append(evs, &events.ToolCompleted{RunID: st.OpenRun, Step: st.Step, CallID: c.ID, Tool: c.Name, Output: text, IsError: true, Outcome: outcome})
	}
	return append(evs, &events.RunFinished{RunID: st.OpenRun, Status: events.RunStopped, Reason: events.StoppedByOwner, By: stop.By})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
