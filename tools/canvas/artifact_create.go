package canvas

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed artifact_create.md
var createDescription string

// Create is artifact_create: a new canvas with its first version.
type Create struct{ base }

func (Create) Def() tools.Def {
	return tools.Def{Name: "artifact_create", Description: createDescription, Default: true, Params: json.RawMessage(`{
  "type": "object",
  "properties": {
    "title": {"type": "string", "description": "A short title, 1-200 characters."},
    "kind": {"type": "string", "enum": ["markdown", "code", "mermaid", "html", "svg"], "description": "What the canvas holds; images come only through artifact_import."},
    "content": {"type": "string", "description": "The whole content of version 1."},
    "language": {"type": "string", "description": "For kind code: the language name (go, python, sql, ...)."}
  },
  "required": ["title", "kind", "content"],
  "additionalProperties": false
}`)}
}

func (c Create) Run(ctx context.Context, env tools.Env, args json.RawMessage) (tools.Result, error) {
	var a struct {
		Title    string  `json:"title"`
		Kind     string  `json:"kind"`
		Content  *string `json:"content"`
		Language string  `json:"language"`
	}
	if msg, ok := tools.DecodeArgs("artifact_create", args, &a); !ok {
		return tools.Failf("%s", msg), nil
	}
	if a.Content == nil {
		return tools.Failf("content is required (it may be empty)"), nil
	}
	if a.Kind == events.KindImage {
		return tools.Failf("Image canvases come only from a workspace file: use artifact_import."), nil
	}
	if why := writable(env); why != "" {
		return tools.Failf("%s", why), nil
	}
	if env.Canvas.Created >= MaxCreatesPerTurn {
		return tools.Failf("Nothing was written: this turn has already created %d canvases, the most one turn may. Tell the owner what is left to do.", MaxCreatesPerTurn), nil
	}
	w, err := c.svc.Create(ctx, Write{Title: a.Title, Kind: a.Kind, Language: a.Language, Content: *a.Content, Op: events.OpCreate,
		Author: env.AgentID, Conversation: env.Conversation, RunID: env.Canvas.RunID})
	if err != nil {
		return failed(err)
	}
	return tools.Result{Output: fmt.Sprintf("Created canvas %q (id %s, %s), version 1, %d lines.", w.Record.Title, w.Record.ID, w.Record.Kind, tools.LineCount(*a.Content)),
		Canvas: ref(w.Record, 1, events.OpCreate, true)}, nil
}
