package loop

import (
	"context"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools/script"
)

// Result texts the harness gives instead of a tool's own.
var (
	deniedText      = "DENIED_TOOL: the owner denied this call. It was not run and nothing changed. Decide what to do next without it."
	expiredText     = "DENIED_TOOL: nobody approved this call before its approval expired, so it was not run and nothing changed. Do not redo it, or its equivalent, with another tool."
	interruptedText = "Interrupted: the server stopped while this call was running. It may or may not have run; check its effect before repeating it."
	tooManyText     = fmt.Sprintf("Not run: at most %d tool calls run per model reply. Ask for the rest in your next reply.", MaxCallsPerReply)
)

// settle answers the unanswered tool calls of the last reply, in the order
// written: calls cut by a restart are closed (or resumed), decided
// approvals run or are denied, answered questions get their answer, calls
// past the cap are refused, and the rest go through the pipeline
// (call.go). paused: an approval or a question is pending. done: the run
// finished (a delegated conversation's ask_user was called).
func (t *Turn) settle(ctx context.Context, s snapshotOf) (paused, done bool, err error) {
	// A delegated conversation's ask_user ends the turn once the reply's
	// calls are settled (its question goes to the delegating agent), even
	// when a gated call in the same reply paused in between.
	ends := false
	for _, c := range s.calls {
		tool, _ := t.tool(c.Name)
		tr := traitsOf(tool)
		ends = ends || tr.endsTurn || (tr.asks && s.child)
	}
	unanswered := 0
	for i, c := range s.calls {
		if s.answered[c.ID] {
			continue
		}
		unanswered++
		if err := ctx.Err(); err != nil {
			return false, false, err
		}
		if t.nestedCapReached() {
			// A script used up the turn's nested calls (R-SCR): the
			// calls after it are closed unrun and the turn halts.
			return false, true, t.haltNested(ctx, s, i)
		}
		paused, err := t.settleCall(ctx, s, i, c)
		if err != nil || paused {
			return paused, false, err
		}
	}
	if unanswered > 0 && t.nestedCapReached() {
		return false, true, t.haltNested(ctx, s, len(s.calls))
	}
	if ends && unanswered > 0 {
		return false, true, t.finish(ctx, s.openRun, events.RunDone, "ask_user", "")
	}
	return false, false, nil
}

// settleCall answers call c, the i-th of the reply.
func (t *Turn) settleCall(ctx context.Context, s snapshotOf, i int, c events.ToolCallRequest) (paused bool, err error) {
	step := s.step
	if s.calling[c.ID] {
		// A call recorded as started and never finished may or may not
		// have run: close it, approved or not — never run it twice. A tool
		// that resumes (delegate: its child carries on) is resumed.
		if tool, ok := t.tool(c.Name); ok && traitsOf(tool).resumes && i < MaxCallsPerReply {
			return false, t.resume(ctx, &toolCall{ToolCallRequest: c, runID: s.openRun, step: step, tool: tool})
		}
		return false, t.result(ctx, s.openRun, step, c, interruptedText, true, "interrupted")
	}
	if q, ok := s.question[c.ID]; ok {
		if q.Outcome == "" {
			return true, nil // waiting for the owner's answer
		}
		return false, t.answered(ctx, s, c, q)
	}
	if a, ok := s.approval[c.ID]; ok {
		switch a.Decision {
		case "":
			return true, nil
		case events.DecisionApproved:
			return false, t.approved(ctx, s.openRun, step, c)
		case events.DecisionDenied:
			return false, t.result(ctx, s.openRun, step, c, deniedText, true, "denied")
		case events.DecisionExpired:
			return false, t.result(ctx, s.openRun, step, c, expiredText, true, "expired")
		}
		return false, nil
	}
	// i is the call's place in the reply, so the cap holds across a pause
	// for approval or a restart.
	if i >= MaxCallsPerReply {
		return false, t.result(ctx, s.openRun, step, c, tooManyText, true, "blocked")
	}
	return t.call(ctx, s, c)
}

// nestedCapReached: the open run's scripts made max_steps × 10 calls.
func (t *Turn) nestedCapReached() bool {
	var n int
	t.conv.View(func(st *State) { n = st.NestedCalls })
	return n >= t.agent.MaxSteps*script.TurnCallsEach
}

// haltNested closes the reply's calls from the i-th on that have no
// result and halts the run with reason nested_calls.
func (t *Turn) haltNested(ctx context.Context, s snapshotOf, from int) error {
	var open []events.ToolCallRequest
	answered := t.answeredNow()
	for _, c := range s.calls[from:] {
		if !answered[c.ID] {
			open = append(open, c)
		}
	}
	msg := fmt.Sprintf("Not run: this turn's scripts used up their %d nested calls (max_steps × %d), so the turn was halted. Nothing was run and nothing changed.",
		t.agent.MaxSteps*script.TurnCallsEach, script.TurnCallsEach)
	if err := t.refuseAll(ctx, s.openRun, s.step, open, msg, "nested_calls"); err != nil {
		return err
	}
	return t.finish(ctx, s.openRun, events.RunHalted, "nested_calls", "")
}

func (t *Turn) answeredNow() map[string]bool {
	var answered map[string]bool
	t.conv.View(func(st *State) { _, answered = st.ReplyCalls() })
	return answered
}
