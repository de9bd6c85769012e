package loop

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools/kit"
)

// The owner's hook commands run around the loop (R-LOOP-8), Claude Code
// style: UserPromptSubmit when a run starts on the owner's messages,
// PreToolUse right before a call runs (after its approval; exit code 2
// blocks it and stderr becomes the tool result), PostToolUse after it ran
// (exit code 2 adds stderr to the result the model reads), Stop when the
// run ends. The tool hooks are a decorator around every call (hooked, in
// call.go); the turn never calls them itself. Every hook that ran is a hook_ran event. A hooks.json that does
// not load blocks what a hook could block — the owner's guard must not
// silently go missing — and the error says which file and where.

// hooks loads the hooks once per pass; edits apply from the next pass.
func (t *Turn) hooks() (*kit.Hooks, error) {
	if !t.hooksRead {
		t.hooksRead = true
		if t.deps.HomeDir != "" || t.agent.Dir != "" {
			t.hk, t.hkErr = kit.LoadHooks(t.deps.Services.Sandbox, t.deps.HomeDir, t.agent.Dir)
		}
	}
	return t.hk, t.hkErr
}

// promptHook runs the UserPromptSubmit hooks of a run that has made no
// model call and has not run them, and halts it when one blocks.
func (t *Turn) promptHook(ctx context.Context) (halted bool, err error) {
	var runID string
	var prompt []string
	due := false
	t.conv.View(func(st *State) {
		runID, prompt = st.OpenRun, append([]string(nil), st.RunPrompt...)
		due = st.OpenRun != "" && st.Step == 0 && !st.PromptChecked && st.RootID == ""
	})
	if !due || t.promptHooked {
		return false, nil
	}
	t.promptHooked = true // with no hooks nothing is recorded: once per pass
	return t.steerHook(ctx, runID, 0, prompt)
}

// steerHook runs UserPromptSubmit on the owner's words entering the run
// (its opening messages, or steers at a tool boundary) and halts the run
// when a hook blocks.
func (t *Turn) steerHook(ctx context.Context, runID string, step int, words []string) (halted bool, err error) {
	reason, blocked, err := t.hook(ctx, runID, step, kit.UserPromptSubmit, nil, map[string]any{"prompt": strings.Join(words, "\n\n")})
	if err != nil || !blocked {
		return false, err
	}
	return true, t.finish(ctx, runID, events.RunHalted, "hook", reason)
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
	var outs []kit.Outcome
	if t.replayed != nil {
		outs = t.replayed.hooksRan(runID, step, event, callID) // never run again
	} else {
		outs = h.Run(ctx, event, tool, payload, t.agent.Workspace)
	}
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
	if event == kit.PreToolUse || event == kit.UserPromptSubmit {
		// A guard that could not start or did not finish fails closed.
		for _, o := range outs {
			if o.ExitCode == -1 && ctx.Err() == nil {
				reason = strings.TrimSpace(reason + "\nThe hook " + strconv.Quote(o.Command) + " did not run to its end: " + strings.TrimSpace(o.Output))
				blocked = true
			}
		}
	}
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
