package desktop

import (
	"context"
	_ "embed"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
)

//go:embed computer_act.md
var actDescription string

// Act is computer_act: click, type, press keys, scroll or bring an app to
// the front, on the latest frame, in the agent's computer_apps only.
type Act struct{ s *seen }

func (Act) NeedsApproval() bool { return true }

func (Act) Def() tools.Def {
	return tools.Def{Name: ActTool, Description: actDescription + "\n" + fence.Rule}
}

// actArgs are computer_act's arguments: the helper's act (wire.Act,
// field for field) with what the model is told of each.
type actArgs struct {
	Action  string `json:"action" jsonschema:"What to do." schema:"enum=click|type|key|scroll|front"`
	FrameID string `json:"frame_id" jsonschema:"The frame_id of your latest computer_screenshot or computer_observe."`
	Ref     string `json:"ref,omitempty" jsonschema:"An element of the latest outline (click, type, scroll), e.g. e12."`
	X       *int   `json:"x,omitempty" jsonschema:"Screen x (click, scroll) when there is no ref." schema:"minimum=0"`
	Y       *int   `json:"y,omitempty" jsonschema:"Screen y (click, scroll) when there is no ref." schema:"minimum=0"`
	Button  string `json:"button,omitempty" jsonschema:"click: the mouse button (default left)." schema:"enum=left|middle|right"`
	Count   int    `json:"count,omitempty" jsonschema:"click: 2 for a double click (default 1)." schema:"minimum=1,maximum=3"`
	Text    string `json:"text,omitempty" jsonschema:"type: the text, typed into the focused editable element (or ref's, which must have the focus)."`
	Keys    string `json:"keys,omitempty" jsonschema:"key: a key or combination, e.g. Tab, ctrl+a, shift+Tab, Escape."`
	DX      int    `json:"dx,omitempty" jsonschema:"scroll: steps right (negative: left)."`
	DY      int    `json:"dy,omitempty" jsonschema:"scroll: steps down (negative: up)."`
	App     string `json:"app,omitempty" jsonschema:"front: the app to bring to the front, by X11 class or executable name."`
}

// Check refuses, before anyone is asked, what is certain to be refused
// (see rules.go).
func (t Act) Check(env tools.Env, a actArgs) error {
	v, _ := t.s.get(env.Conversation)
	return refusal(env.Agent.ComputerApps, wire.Act(a), v)
}

// AskWhen names why a call asks even in an autonomous conversation; a
// call certain to be refused never asks.
func (t Act) AskWhen(env tools.Env, a actArgs) string {
	v, _ := t.s.get(env.Conversation)
	if refusal(env.Agent.ComputerApps, wire.Act(a), v) != nil {
		return "" // refused anyway: nobody is asked
	}
	return askReason(wire.Act(a), v)
}

// AllowWhen lets through without asking only calls certain to be
// refused, so the refusal reaches the turn at once.
func (t Act) AllowWhen(env tools.Env, a actArgs) bool {
	return t.Check(env, a) != nil
}

func (t Act) Run(ctx context.Context, env tools.Env, a actArgs) (tools.Result, error) {
	v, _ := t.s.get(env.Conversation)
	if err := refusal(env.Agent.ComputerApps, wire.Act(a), v); err != nil {
		return tools.Failf("%v", err), nil
	}
	act := wire.Act(a)
	ans, fail := call(ctx, env, wire.Request{Op: wire.OpAct, Act: &act})
	if fail != nil {
		return *fail, nil
	}
	return tools.Result{Output: fence.Wrap("the desktop helper (computer_act)", ans.Done) +
		"\nTake a new screenshot or observe to see the result."}, nil
}
