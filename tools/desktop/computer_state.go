package desktop

import (
	"context"
	_ "embed"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
)

//go:embed computer_state.md
var stateDescription string

// State is computer_state: the screen's size, the app and window in
// front, whether the screen is locked or input secure.
type State struct{ s *seen }

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (State) ReadOnly() bool { return true }

func (State) Def() tools.Def {
	return tools.Def{Name: StateTool, Description: stateDescription + "\n" + fence.Rule}
}

// noArgs are the arguments of a tool that takes none.
type noArgs struct{}

func (State) Run(ctx context.Context, env tools.Env, _ noArgs) (tools.Result, error) {
	ans, fail := call(ctx, env, wire.Request{Op: wire.OpState})
	if fail != nil {
		return *fail, nil
	}
	return tools.Result{Output: fence.Wrap("the desktop helper (computer_state)", describeState(ans.State)),
		Meta: map[string]any{"locked": ans.State != nil && ans.State.Locked}}, nil
}
