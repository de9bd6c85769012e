package loop

import (
	"context"
	"encoding/json"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/kit"
)

// The owner's hook commands run around the loop (R-LOOP-8), Claude Code
// style: UserPromptSubmit when a run starts on the owner's messages,
// PreToolUse right before a call runs (after its approval; exit code 2
// blocks it and stderr becomes the tool result), PostToolUse after it ran
// (exit code 2 adds stderr to the result the model reads), Stop when the
// run ends. Every hook that ran is a hook_ran event. A hooks.json that does
// not load blocks what a hook could block — the owner's guard must not
// silently go missing — and the error says which file and where.

// hooks loads the hooks once per pass; edits apply from the next pass.
func (t *Turn) hooks() (*kit.Hooks, error) {
	if !t.hooksRead {
		t.hooksRead = true
		if t.deps.HomeDir != "" || t.agent.Dir != "" {
			t.hk, t.hkErr = kit.LoadHooks(t.deps.HomeDir, t.agent.Dir)
		}
	}
	return t.hk, t.hkErr
}

// hook runs the hooks of event, records each run, and says whether one
// blocked and why.
func (t *Turn) hook(ctx context.Context, runID string, step int, event string, call *events.ToolCallRequest, payload map[string]any) (reason string, blocked bool, err error) {
	h, herr := t.hooks()
	if herr != nil {
		if event == kit.PreToolUse || event == kit.UserPromptSubmit {
			return "The owner's hooks could not be loaded, so this was not run: " + herr.Error(), true, nil
		}
		return "", false, nil
	}
	var tool, callID string
	if call != nil {
		tool, callID = call.Name, call.ID
	}
	payload["session_id"] = t.conv.ID()
	payload["run_id"] = runID
	payload["agent"] = t.agent.ID
	payload["cwd"] = t.agent.Workspace
	outs := h.Run(ctx, event, tool, payload, t.agent.Workspace)
	if len(outs) == 0 {
		return "", false, nil
	}
	evs := make([]events.Event, len(outs))
	for i, o := range outs {
		out := o.Output
		if out == "" {
			out = o.Reason
		}
		evs[i] = &events.HookRan{RunID: runID, Step: step, Hook: event, Command: o.Command, CallID: callID, Tool: tool,
			ExitCode: o.ExitCode, Output: out, Blocked: o.Blocked, TimedOut: o.TimedOut, DurationMS: o.Duration.Milliseconds()}
	}
	if err := t.emit(ctx, evs...); err != nil {
		return "", false, err
	}
	reason, blocked = kit.BlockReason(outs)
	if !blocked && event == kit.PostToolUse {
		// Exit code 2 after the call: its stderr is feedback for the model.
		for _, o := range outs {
			if o.Reason != "" {
				reason += o.Reason + "\n"
			}
		}
	}
	return reason, blocked, nil
}

func rawArgs(a json.RawMessage) any {
	if !json.Valid(a) {
		return string(a)
	}
	return a
}
