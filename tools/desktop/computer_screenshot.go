package desktop

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
)

//go:embed computer_screenshot.md
var screenshotDescription string

// Screenshot is computer_screenshot: a PNG of the screen or of the window
// in front, with a frame_id for computer_act.
type Screenshot struct{ s *seen }

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (Screenshot) ReadOnly() bool { return true }

func (Screenshot) Def() tools.Def {
	return tools.Def{Name: ScreenshotTool, Description: screenshotDescription + "\n" + fence.Rule}
}

type screenshotArgs struct {
	Window bool `json:"window,omitempty" jsonschema:"Only the window in front instead of the whole screen."`
}

func (sc Screenshot) Run(ctx context.Context, env tools.Env, a screenshotArgs) (tools.Result, error) {
	ans, fail := call(ctx, env, wire.Request{Op: wire.OpScreenshot, Window: a.Window})
	if fail != nil {
		return *fail, nil
	}
	if len(ans.PNG) == 0 || ans.FrameID == "" {
		return tools.Failf("the desktop helper sent no image"), nil
	}
	sc.s.frame(env.Conversation, ans, false)
	origin := wire.Point{}
	if ans.Origin != nil {
		origin = *ans.Origin
	}
	out := fmt.Sprintf("frame_id: %s\nThe image's top-left corner is at screen (%d,%d); computer_act takes screen coordinates.\n",
		ans.FrameID, origin.X, origin.Y) + fence.Wrap("the desktop helper (computer_screenshot)", describeState(ans.State))
	return tools.Result{Output: out, Parts: []tools.Part{tools.ImagePart("image/png", ans.PNG)},
		Meta: map[string]any{"frame_id": ans.FrameID}}, nil
}
