package loop

import (
	"context"
	"fmt"
	"time"

	"github.com/my-agent-crew/crew/events"
)

// Result texts the harness gives instead of a tool's own.
const (
	deniedText      = "DENIED_TOOL: the owner denied this call. It was not run and nothing changed. Decide what to do next without it."
	expiredText     = "DENIED_TOOL: nobody approved this call before its approval expired, so it was not run and nothing changed. Do not redo it, or its equivalent, with another tool."
	interruptedText = "Interrupted: the server stopped while this call was running. It may or may not have run; check its effect before repeating it."
	tooManyText     = "Not run: at most 8 tool calls run per model reply. Ask for the rest in your next reply."
	askUserText     = "Your question was shown to the owner. Their answer will come as their next message; end your reply here."
	noteText        = "Noted."
)

// settle answers the unanswered tool calls of the last reply, in the order
// written: decided approvals run or are denied, interrupted calls are
// closed, the rest go through the gate. paused: an approval is pending.
// done: the run finished (ask_user ends the turn).
func (t *Turn) settle(ctx context.Context, s snapshotOf) (paused, done bool, err error) {
	// ask_user ends the turn once the reply's calls are settled, even when
	// a gated call in the same reply paused in between.
	asked := false
	for _, c := range s.calls {
		asked = asked || c.Name == "ask_user"
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
		step := s.step
		// A delegate call waits for its child, also when it was recorded
		// before a restart: the child carries on, nothing runs twice.
		if c.Name == DelegateTool && i < MaxCallsPerReply {
			if err := t.delegate(ctx, s, step, c); err != nil {
				return false, false, err
			}
			continue
		}
		// A call recorded as started and never finished may or may not
		// have run: close it, approved or not — never run it twice.
		if s.calling[c.ID] {
			if err := t.result(ctx, s.openRun, step, c, interruptedText, true, "interrupted"); err != nil {
				return false, false, err
			}
			continue
		}
		if a, ok := s.approval[c.ID]; ok {
			switch a.Decision {
			case "":
				return true, false, nil
			case events.DecisionApproved:
				if err := t.execute(ctx, s.openRun, step, c); err != nil {
					return false, false, err
				}
			case events.DecisionDenied:
				if err := t.result(ctx, s.openRun, step, c, deniedText, true, "denied"); err != nil {
					return false, false, err
				}
			case events.DecisionExpired:
				if err := t.result(ctx, s.openRun, step, c, expiredText, true, "expired"); err != nil {
					return false, false, err
				}
			}
			continue
		}
		// i is the call's place in the reply, so the cap holds across a
		// pause for approval or a restart.
		if i >= MaxCallsPerReply {
			if err := t.result(ctx, s.openRun, step, c, tooManyText, true, "blocked"); err != nil {
				return false, false, err
			}
			continue
		}
		switch c.Name {
		case "ask_user":
			asked = true
			if err := t.result(ctx, s.openRun, step, c, askUserText, false, ""); err != nil {
				return false, false, err
			}
			continue
		case "progress_note":
			if err := t.result(ctx, s.openRun, step, c, noteText, false, ""); err != nil {
				return false, false, err
			}
			continue
		}
		tool, ok := t.lookup(c.Name)
		if !ok {
			if err := t.result(ctx, s.openRun, step, c, fmt.Sprintf("Unknown tool %q: it is not one of your tools.", c.Name), true, "blocked"); err != nil {
				return false, false, err
			}
			continue
		}
		verdict, reason := Gate(tool, t.toolEnv(), c.Arguments, s.auton || t.agent.Autonomous, s.auto)
		if verdict == Ask {
			ttl := t.agent.ApprovalTTL
			if s.ttl > 0 {
				ttl = time.Duration(s.ttl) * time.Second
			}
			return true, false, t.emit(ctx, &events.ApprovalRequested{
				ApprovalID: t.deps.NewID(), RunID: s.openRun, Step: step, CallID: c.ID, Tool: c.Name,
				Arguments: c.Arguments, Reason: reason, ExpiresAt: t.deps.Clock().Add(ttl).UTC(),
			})
		}
		if err := t.execute(ctx, s.openRun, step, c); err != nil {
			return false, false, err
		}
	}
	if asked && unanswered > 0 {
		return false, true, t.finish(ctx, s.openRun, events.RunDone, "ask_user", "")
	}
	return false, false, nil
}
