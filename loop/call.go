package loop

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/kit"
	"github.com/my-agent-crew/crew/tools"
)

func (t *Turn) lookup(name string) (tools.Tool, bool) {
	if !contains(t.agent.Tools, name) || t.deps.Tools == nil {
		return nil, false
	}
	return t.deps.Tools.Lookup(name)
}

func (t *Turn) toolEnv() tools.Env {
	return tools.Env{
		Workspace:    t.agent.Workspace,
		AgentID:      t.agent.ID,
		Conversation: t.conv.ID(),
		SpillDir:     spillDir(t.deps.SpillDir, t.conv.ID()),
		Agent:        t.agent.Policy,
		Clock:        t.deps.Clock,
		AgentDir:     t.agent.Dir,
		HomeDir:      t.deps.HomeDir,
		Location:     t.deps.Location,
	}
}

func spillDir(root, conv string) string {
	if root == "" {
		return ""
	}
	return root + "/" + conv
}

// execute records the call, runs the tool, cuts its output and records the
// result. A crash between the two records leaves the call "calling": the
// next pass closes it as interrupted, never re-runs it.
func (t *Turn) execute(ctx context.Context, runID string, step int, c events.ToolCallRequest) error {
	tool, ok := t.lookup(c.Name)
	if !ok {
		return t.result(ctx, runID, step, c, fmt.Sprintf("Unknown tool %q: it is not one of your tools.", c.Name), true, "blocked")
	}
	if reason, blocked, err := t.hook(ctx, runID, step, kit.PreToolUse, &c, map[string]any{"tool_input": rawArgs(c.Arguments)}); err != nil {
		return err
	} else if blocked {
		return t.result(ctx, runID, step, c, "Blocked by the owner's PreToolUse hook, so it was not run and nothing changed: "+reason, true, "blocked")
	}
	if err := t.emit(ctx, &events.ToolCalled{RunID: runID, Step: step, CallID: c.ID, Tool: c.Name, Arguments: c.Arguments}); err != nil {
		return err
	}
	start := t.deps.Clock()
	res, err := tool.Run(ctx, t.toolEnv(), c.Arguments)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // stopping: the next start closes the call as interrupted
		}
		res = tools.Result{Output: "The harness failed to run this tool: " + err.Error(), IsError: true}
	}
	full := res.Output
	shown, truncated := full, false
	if c.Name != "tool_output_read" { // it pages through a spill already
		shown, truncated = tools.Truncate(full, t.agent.ToolOutputChars)
	}
	var spill string
	if truncated {
		if spill, err = tools.Spill(t.toolEnv(), c.ID, full); err != nil {
			shown += "\n(The full output could not be kept: " + err.Error() + ")"
			spill = ""
		}
	}
	// PostToolUse hooks run under their own timeouts; a shutdown cuts
	// them, never the result below.
	if feedback, _, err := t.hook(ctx, runID, step, kit.PostToolUse, &c, map[string]any{
		"tool_input": rawArgs(c.Arguments), "tool_response": map[string]any{"output": shown, "is_error": res.IsError}}); err == nil && feedback != "" {
		shown += "\n\n[The owner's PostToolUse hook says]\n" + strings.TrimSpace(feedback)
	}
	// The tool ran: its result is recorded even if shutdown began
	// meanwhile, or the next start would have to call it interrupted.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return t.emit(rctx, &events.ToolCompleted{
		RunID: runID, Step: step, CallID: c.ID, Tool: c.Name, Output: shown, IsError: res.IsError,
		Truncated: truncated, SpillPath: spill, DurationMS: t.deps.Clock().Sub(start).Milliseconds(),
	})
}

func (t *Turn) result(ctx context.Context, runID string, step int, c events.ToolCallRequest, text string, isErr bool, outcome string) error {
	return t.emit(ctx, &events.ToolCompleted{RunID: runID, Step: step, CallID: c.ID, Tool: c.Name, Output: text, IsError: isErr, Outcome: outcome})
}

// callModel makes the step's model call over the route chain and records
