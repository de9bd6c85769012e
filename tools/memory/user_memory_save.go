package memory

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/tools"
)

//go:embed user_memory_save.md
var userMemorySaveDescription string

// factsDir holds the owner's fact files beneath the home.
const factsDir = "users/owner/facts"

// userMemorySave appends a line to one of the owner's fact files.
type userMemorySave struct{ files *files }

func (userMemorySave) Def() tools.Def {
	return tools.Def{Name: "user_memory_save", Description: userMemorySaveDescription, Default: true}
}

type userMemorySaveArgs struct {
	Name string `json:"name" jsonschema:"The fact file, e.g. \"diet\" or \"family\"; no \".md\"." schema:"pattern=^[a-z0-9][a-z0-9_-]{0,63}$"`
	Text string `json:"text" jsonschema:"The fact, one line if possible."`
}

func (t userMemorySave) Run(ctx context.Context, env tools.Env, a userMemorySaveArgs) (tools.Result, error) {
	if res, ok := checkName("name", a.Name); !ok {
		return res, nil
	}
	text := Normalize(strings.TrimSpace(a.Text))
	if text == "" {
		return tools.Failf("text is required: the fact to save"), nil
	}
	root, err := openDir("user_memory_save", env.HomeDir)
	if err != nil {
		return tools.Result{}, err
	}
	defer root.Close()
	name := factsDir + "/" + a.Name + ".md"
	line := "- " + strings.ReplaceAll(text, "\n", "\n  ")
	if mark := env.UntrustedMark(); mark != "" {
		line += " " + mark
	}
	if err := t.files.appendText(root, name, line); err != nil {
		return tools.Result{}, fmt.Errorf("user_memory_save: %s: %w", name, err)
	}
	return tools.Result{Output: fmt.Sprintf("saved to %s; the owner's facts are in every agent's system prompt from the next model call", name), Meta: env.Provenance(name)}, nil
}
