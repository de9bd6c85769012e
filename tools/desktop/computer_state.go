package desktop

import (
	"context"
	_ "embed"
	"encoding/json"

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
	return tools.Def{Name: StateTool, Description: stateDescription + "\n" + fence.Rule,
		Params: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)}
}

func (State) Run(ctx context.Context, env tools.Env, args json.RawMessage) (tools.Result, error) {
	var a struct{}
	if msg, ok := tools.DecodeArgs(StateTool, args, &a); !ok {
		return tools.Failf("%s", msg), nil
	}
	ans, fail := call(ctx, env, wire.Request{Op: wire.OpState})
	if fail != nil {
		return *fail, nil
	}
	return tools.Result{Output: fence.Wrap("the desktop helper (computer_state)", describeState(ans.State)),
		Meta: map[string]any{"locked": ans.State != nil && ans.State.Locked}}, nil
}
