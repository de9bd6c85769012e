package loop

import (
	"context"
	_ "embed"
	"encoding/json"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed progress_note.md
var progressNoteDescription string

// ProgressNoteTool puts one line on the owner's timeline; the call itself
// is the note.
const ProgressNoteTool = "progress_note"

const noteText = "Noted."

type progressNote struct{}

func (progressNote) Def() tools.Def {
	return tools.Def{Name: ProgressNoteTool, Description: strings.TrimSpace(progressNoteDescription), Default: true,
		Params: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"The line the owner reads."}},"required":["text"]}`)}
}

func (progressNote) Run(context.Context, tools.Env, json.RawMessage) (tools.Result, error) {
	return tools.Result{Output: noteText}, nil
}

func (progressNote) traits() traits { return traits{instant: true, anyAgent: true} }

func (progressNote) vet(*Turn, events.ToolCallRequest) (string, string, bool) { return "", "", false }

func (p progressNote) answer(ctx context.Context, _ *Turn, c *toolCall) (tools.Result, error) {
	return p.Run(ctx, tools.Env{}, c.Arguments)
}
