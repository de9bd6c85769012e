package loop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
)

// Forker makes forks (R-X-2) on the store of the process that holds it:
// crew serve for POST /api/runs/{id}/fork and the runs page, crew replay
// --from-step on a stopped home. It reads the original and writes only
// the new conversation, through its one writer, then kicks the worker.
type Forker struct {
	Log   ForkLog
	Runs  ForkRuns
	Convs *Convs
	// Spills keep the conversations' cut outputs: the original's are
	// copied (none without).
	Spills tools.Spills
	// Routes says whether this home can call a route (a key for it, a
	// script file that loads): llm.Providers.
	Routes interface {
		Model(llm.Route) (llm.Model, error)
	}
	Kicker Kicker
	// Clock makes the fork's ids (nil: WallClock).
	Clock Clock
}

// ForkLog is what a fork reads of the log: the original conversation.
type ForkLog interface {
	ReadAll(ctx context.Context, filter string, from uint64) ([]events.Envelope, error)
}

// ForkRuns finds a run a moment after it was stored (read-your-writes):
// its conversation and that conversation's title ("" when untitled);
// ok false: no such run.
type ForkRuns interface {
	RunConversation(ctx context.Context, runID string) (conversation, title string, ok bool, err error)
	// RunEnded is how the run stands once what was written is read: its
	// status and reason, and its steps.
	RunEnded(ctx context.Context, runID string) (status, reason string, steps int, err error)
}

// Forked is a fork made (view.Forked).
type Forked = view.Forked

// Fork copies run at step into a new conversation on route and has the
// worker continue it. Its errors are ErrForkRun, ErrForkStep,
// ErrForkRoute and ErrForkRefused, or the store's.
func (f Forker) Fork(ctx context.Context, runID string, step int, route string) (Forked, error) {
	if err := events.ValidID(runID); err != nil {
		return Forked{}, fmt.Errorf("run %q: %w: %v", runID, ErrForkRun, err)
	}
	r, err := llm.ParseRoute(route)
	if err != nil {
		return Forked{}, fmt.Errorf("%w %q: %v", ErrForkRoute, route, err)
	}
	if _, err := f.Routes.Model(r); err != nil {
		return Forked{}, fmt.Errorf("%w %q: %v", ErrForkRoute, route, err)
	}
	orig, title, ok, err := f.Runs.RunConversation(ctx, runID)
	if err != nil {
		return Forked{}, err
	}
	if !ok {
		return Forked{}, fmt.Errorf("run %s: %w", runID, ErrForkRun)
	}
	envs, err := f.Log.ReadAll(ctx, events.Conv(orig).Filter(), 0)
	if err != nil {
		return Forked{}, err
	}
	if title == "" {
		title = orig
	}
	clock := f.Clock
	if clock == nil {
		clock = WallClock{}
	}
	spec := ForkSpec{Conversation: "fork-" + clock.NewID(), RunID: clock.NewID(), Route: r.String(),
		Title: fmt.Sprintf("Fork of %s at step %d on %s", title, step, r.String())}
	evs, err := ForkEvents(envs, runID, step, spec)
	if err != nil {
		return Forked{}, err
	}
	// tool_output_read finds a result by call id among the conversation's
	// spills: the fork gets a copy of the original's.
	if f.Spills != nil {
		if err := f.Spills.Copy(ctx, orig, spec.Conversation); err != nil {
			return Forked{}, fmt.Errorf("fork: copy the spilled results: %w", err)
		}
	}
	c, err := f.Convs.Get(ctx, spec.Conversation)
	if err != nil {
		return Forked{}, err
	}
	if _, err := c.Append(ctx, func(st *State) ([]events.Event, error) {
		if st.Seq != 0 {
			return nil, fmt.Errorf("fork: conversation %s exists already", spec.Conversation)
		}
		return evs, nil
	}); errors.Is(err, events.ErrTooLarge) {
		return Forked{}, fmt.Errorf("%w: the history to step %d is too large to copy into one event (%v)", ErrForkRefused, step, err)
	} else if err != nil {
		return Forked{}, err
	}
	f.Kicker.Kick(spec.Conversation)
	return Forked{Conversation: spec.Conversation, RunID: spec.RunID, Route: spec.Route,
		From: events.ForkOrigin{Conversation: orig, RunID: runID, Step: step}}, nil
}

// ForkEnd is how a fork made on a stopped home stands once the worker has
// nothing left to run: crew replay --from-step waits for it and prints it.
type ForkEnd struct {
	Forked
	// Waiting is the approval the fork's run waits on; Open says its run
	// is still open otherwise. Either way crew serve takes it up.
	Waiting *Approval
	Open    bool
	// Status, Reason and Steps are the run's, as the runs view has them.
	Status, Reason string
	Steps          int
	// LastReply is the conversation's last assistant text ("" if none).
	LastReply string
}

// Ended waits until worker is idle (the fork's run and whatever it
// delegated have run or wait on the owner) and says how fk stands.
func (f Forker) Ended(ctx context.Context, fk Forked, worker interface{ Idle() bool }) (ForkEnd, error) {
	for !worker.Idle() {
		select {
		case <-ctx.Done():
			return ForkEnd{}, fmt.Errorf("stopped while the fork ran: crew serve takes it up (conversation %s)", fk.Conversation)
		case <-time.After(50 * time.Millisecond):
		}
	}
	end := ForkEnd{Forked: fk}
	var err error
	if end.Status, end.Reason, end.Steps, err = f.Runs.RunEnded(ctx, fk.RunID); err != nil {
		return ForkEnd{}, err
	}
	c, err := f.Convs.Get(ctx, fk.Conversation)
	if err != nil {
		return ForkEnd{}, err
	}
	c.View(func(st *State) {
		end.Open, end.Waiting = st.OpenRun != "", st.PendingApproval()
		for i := len(st.Messages) - 1; i >= 0 && end.LastReply == ""; i-- {
			if m := st.Messages[i]; m.Role == RoleAssistant {
				end.LastReply = m.Text
			}
		}
	})
	return end, nil
}

// Write prints how the fork stands, as crew replay --from-step shows it.
func (e ForkEnd) Write(w io.Writer) {
	switch {
	case e.Waiting != nil:
		fmt.Fprintf(w, "the fork waits for your approval of %s (%s): start crew serve and answer it on the web or Telegram\n", e.Waiting.Tool, e.Waiting.ID)
	case e.Open:
		fmt.Fprintf(w, "the fork's run is still open: crew serve takes it up\n")
	default:
		fmt.Fprintf(w, "run %s %s after %d steps on %s", e.RunID, e.Status, e.Steps, e.Route)
		if e.Reason != "" {
			fmt.Fprintf(w, " (%s)", e.Reason)
		}
		fmt.Fprintln(w)
	}
	if e.LastReply != "" {
		fmt.Fprintf(w, "last reply: %s\n", e.LastReply)
	}
}
