package canvas

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed artifact_create.md
var createDescription string

// Create is artifact_create: a new canvas with its first version.
type Create struct{ base }

func (Create) Def() tools.Def {
	return tools.Def{Name: "artifact_create", Description: createDescription, Default: true}
}

type createArgs struct {
	Title    string  `json:"title" jsonschema:"A short title, 1-200 characters."`
	Kind     string  `json:"kind" jsonschema:"What the canvas holds; images come only through artifact_import." schema:"enum=markdown|code|mermaid|html|svg"`
	Content  *string `json:"content" jsonschema:"The whole content of version 1."`
	Language string  `json:"language,omitempty" jsonschema:"For kind code: the language name (go, python, sql, ...)."`
}

func (c Create) Run(ctx context.Context, env tools.Env, a createArgs) (tools.Result, error) {
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
