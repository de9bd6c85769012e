package loop

import (
	"context"
	_ "embed"
	"encoding/json"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed ask_user.md
var askUserDescription string

// AskUserTool asks the owner a question and ends the turn; the answer is
// their next message.
const AskUserTool = "ask_user"

const askUserText = "Your question was shown to the owner. Their answer will come as their next message; end your reply here."

type askUser struct{}

func (askUser) Def() tools.Def {
	return tools.Def{Name: AskUserTool, Description: strings.TrimSpace(askUserDescription), Default: true,
		Params: json.RawMessage(`{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}`)}
}

func (askUser) Run(context.Context, tools.Env, json.RawMessage) (tools.Result, error) {
	return tools.Result{Output: askUserText}, nil
}

func (askUser) traits() traits { return traits{instant: true, endsTurn: true, anyAgent: true} }

func (askUser) vet(*Turn, events.ToolCallRequest) (string, string, bool) { return "", "", false }

func (a askUser) answer(ctx context.Context, _ *Turn, c *toolCall) (tools.Result, error) {
	return a.Run(ctx, tools.Env{}, c.Arguments)
}
