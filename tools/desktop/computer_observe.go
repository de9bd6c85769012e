package desktop

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
)

//go:embed computer_observe.md
var observeDescription string

// Observe is computer_observe: the accessibility outline of the app in
// front, a ref per actionable element, with a frame_id.
type Observe struct{ s *seen }

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (Observe) ReadOnly() bool { return true }

func (Observe) Def() tools.Def {
	return tools.Def{Name: ObserveTool, Description: observeDescription + "\n" + fence.Rule}
}

func (o Observe) Run(ctx context.Context, env tools.Env, _ noArgs) (tools.Result, error) {
	ans, fail := call(ctx, env, wire.Request{Op: wire.OpObserve})
	if fail != nil {
		return *fail, nil
	}
	o.s.frame(env.Conversation, ans, true)
	head := fmt.Sprintf("frame_id: %s\n", ans.FrameID)
	if ans.NoBridge {
		head += "No outline: this app has no accessibility tree, so there are no refs. Use computer_screenshot and click by coordinates.\n"
	} else {
		head += fmt.Sprintf("%d elements have refs; computer_act takes them with this frame_id.\n", len(ans.Refs))
	}
	body := describeState(ans.State) + "\n" + ans.Outline
	return tools.Result{Output: head + fence.Wrap("the desktop helper (computer_observe)", body),
		Meta: map[string]any{"frame_id": ans.FrameID, "refs": len(ans.Refs)}}, nil
}
