package loop

import (
	"context"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

// Tools are the loop's own tools — ask_user, progress_note, delegate,
// tool_search, tool_script, image_read, compact — for
// the registry: they are declared and offered like any other tool and go
// through the same pipeline, but the turn answers them itself (and knows
// them even when a registry it is given leaves them out).
func Tools() []tools.Tool {
	return []tools.Tool{askUser{}, progressNote{}, delegateTool{}, toolSearch{}, toolScript{}, imageRead{}, compactTool{}}
}

// turnTool is a tool the turn answers itself: it talks to the owner or to
// the crew, not to the world, so it sees the turn, not only the tool env.
type turnTool interface {
	tools.Tool
	traits() traits
	// vet says why a new call would be refused, before the gate.
	vet(t *Turn, c events.ToolCallRequest) (text, outcome string, refused bool)
	// answer produces the call's result within the turn; an error means
	// the harness failed (the call stays open).
	answer(ctx context.Context, t *Turn, c *toolCall) (tools.Result, error)
}

// traits are how the pipeline treats a loop tool.
type traits struct {
	// instant: answered at once, with no tool_called and no hooks.
	instant bool
	// endsTurn: the run ends once the reply's calls are settled.
	endsTurn bool
	// asks: the call is a question to the owner; the turn pauses on it
	// (in a delegated conversation it goes back to the delegating agent,
	// and the run ends once the reply's calls are settled).
	asks bool
	// resumes: a call cut by a restart is resumed, not closed as
	// interrupted.
	resumes bool
	// anyAgent: every agent may call it, listed in its tools or not (it
	// only talks to the owner); it is offered only when listed.
	anyAgent bool
}

func traitsOf(tool tools.Tool) traits {
	if lt, ok := tool.(turnTool); ok {
		return lt.traits()
	}
	return traits{}
}
