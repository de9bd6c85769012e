package desktop

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"

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
	return tools.Def{Name: ActTool, Description: actDescription + "\n" + fence.Rule, Params: json.RawMessage(`{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["click", "type", "key", "scroll", "front"], "description": "What to do."},
    "frame_id": {"type": "string", "description": "The frame_id of your latest computer_screenshot or computer_observe."},
    "ref": {"type": "string", "description": "An element of the latest outline (click, type, scroll), e.g. e12."},
    "x": {"type": "integer", "minimum": 0, "description": "Screen x (click, scroll) when there is no ref."},
    "y": {"type": "integer", "minimum": 0, "description": "Screen y (click, scroll) when there is no ref."},
    "button": {"type": "string", "enum": ["left", "middle", "right"], "description": "click: the mouse button (default left)."},
    "count": {"type": "integer", "minimum": 1, "maximum": 3, "description": "click: 2 for a double click (default 1)."},
    "text": {"type": "string", "description": "type: the text, typed into the focused editable element (or ref's, which must have the focus)."},
    "keys": {"type": "string", "description": "key: a key or combination, e.g. Tab, ctrl+a, shift+Tab, Escape."},
    "dx": {"type": "integer", "description": "scroll: steps right (negative: left)."},
    "dy": {"type": "integer", "description": "scroll: steps down (negative: up)."},
    "app": {"type": "string", "description": "front: the app to bring to the front, by X11 class or executable name."}
  },
  "required": ["action", "frame_id"],
  "additionalProperties": false
}`)}
}

// actArgs decodes a call's arguments into the helper's act.
func actArgs(args json.RawMessage) (wire.Act, error) {
	var a wire.Act
	if msg, ok := tools.DecodeArgs(ActTool, args, &a); !ok {
		return a, errors.New(msg)
	}
	return a, nil
}

// Check refuses, before anyone is asked, what is certain to be refused
// (see rules.go).
func (t Act) Check(env tools.Env, args json.RawMessage) error {
	a, err := actArgs(args)
	if err != nil {
		return err
	}
	v, _ := t.s.get(env.Conversation)
	return refusal(env.Agent.ComputerApps, a, v)
}

// AskWhen names why a call asks even in an autonomous conversation; a
// call certain to be refused never asks.
func (t Act) AskWhen(env tools.Env, args json.RawMessage) string {
	a, err := actArgs(args)
	if err != nil {
		return ""
	}
	v, _ := t.s.get(env.Conversation)
	if refusal(env.Agent.ComputerApps, a, v) != nil {
		return "" // refused anyway: nobody is asked
	}
	return askReason(a, v)
}

// AllowWhen lets through without asking only calls certain to be
// refused, so the refusal reaches the turn at once.
func (t Act) AllowWhen(env tools.Env, args json.RawMessage) bool {
	return t.Check(env, args) != nil
}

func (t Act) Run(ctx context.Context, env tools.Env, args json.RawMessage) (tools.Result, error) {
	a, err := actArgs(args)
	if err != nil {
		return tools.Failf("%v", err), nil
	}
	v, _ := t.s.get(env.Conversation)
	if err := refusal(env.Agent.ComputerApps, a, v); err != nil {
		return tools.Failf("%v", err), nil
	}
	ans, fail := call(ctx, env, wire.Request{Op: wire.OpAct, Act: &a})
	if fail != nil {
		return *fail, nil
	}
	return tools.Result{Output: fence.Wrap("the desktop helper (computer_act)", ans.Done) +
		"\nTake a new screenshot or observe to see the result."}, nil
}
