package memory

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/tools"
)

//go:embed memory_save.md
var memorySaveDescription string

// memorySave appends a timestamped line to today's daily note.
type memorySave struct{ files *files }

func (memorySave) Def() tools.Def {
	return tools.Def{Name: "memory_save", Description: memorySaveDescription, Default: true}
}

type memorySaveArgs struct {
	Text string `json:"text" jsonschema:"What to remember, one line if possible."`
}

func (t memorySave) Run(ctx context.Context, env tools.Env, a memorySaveArgs) (tools.Result, error) {
	text := Normalize(strings.TrimSpace(a.Text))
	if text == "" {
		return tools.Failf("text is required: what to remember"), nil
	}
	root, err := openDir("memory_save", env.AgentDir)
	if err != nil {
		return tools.Result{}, err
	}
	defer root.Close()
	now := t.files.now()
	name := DailyNote(now)
	line := "- " + now.Format("15:04") + " " + strings.ReplaceAll(text, "\n", "\n  ")
	if mark := env.UntrustedMark(); mark != "" {
		line += " " + mark
	}
	if err := t.files.appendText(root, name, line); err != nil {
		return tools.Result{}, fmt.Errorf("memory_save: %s: %w", name, err)
	}
	return tools.Result{Output: fmt.Sprintf("saved to %s; it will be in the turn notes of the next message", name), Meta: env.Provenance(name)}, nil
}
