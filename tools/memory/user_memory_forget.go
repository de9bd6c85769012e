package memory

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/tools"
)

//go:embed user_memory_forget.md
var userMemoryForgetDescription string

// userMemoryForget removes a fact file or the lines of it holding a text.
type userMemoryForget struct{ files *files }

func (userMemoryForget) Def() tools.Def {
	return tools.Def{Name: "user_memory_forget", Description: userMemoryForgetDescription, Default: true}
}

type userMemoryForgetArgs struct {
	Name string  `json:"name" jsonschema:"The fact file, no \".md\"." schema:"pattern=^[a-z0-9][a-z0-9_-]{0,63}$"`
	Text *string `json:"text,omitempty" jsonschema:"Remove only the lines containing this exact text (case-sensitive). Leave out to remove the whole file."`
}

func (t userMemoryForget) Run(ctx context.Context, env tools.Env, a userMemoryForgetArgs) (tools.Result, error) {
	if res, ok := checkName("name", a.Name); !ok {
		return res, nil
	}
	if a.Text != nil && *a.Text == "" {
		return tools.Failf("text is empty; leave it out to remove the whole fact file"), nil
	}
	root, err := openDir("user_memory_forget", env.HomeDir)
	if err != nil {
		return tools.Result{}, err
	}
	defer root.Close()
	name := factsDir + "/" + a.Name + ".md"

	t.files.mu.Lock()
	defer t.files.mu.Unlock()
	old, exists, err := readFile(root, name)
	if err != nil {
		return tools.Result{}, fmt.Errorf("user_memory_forget: %s: %w", name, err)
	}
	if !exists {
		return tools.Failf("there is no fact file %s; nothing was removed", name), nil
	}
	if a.Text == nil {
		if err := root.Remove(name); err != nil {
			return tools.Result{}, fmt.Errorf("user_memory_forget: %s: %w", name, err)
		}
		return tools.Result{Output: "removed " + name}, nil
	}
	var kept []string
	lines := strings.SplitAfter(old, "\n")
	for _, l := range lines {
		if !strings.Contains(l, *a.Text) {
			kept = append(kept, l)
		}
	}
	n := len(lines) - len(kept)
	if n == 0 {
		return tools.Failf("no line of %s contains %q (the match is exact and case-sensitive); nothing was removed", name, *a.Text), nil
	}
	if err := tools.WriteAtomic(t.files.svc.Secrets, root, name, []byte(strings.Join(kept, "")), 0o644); err != nil {
		return tools.Result{}, fmt.Errorf("user_memory_forget: %s: %w", name, err)
	}
	return tools.Result{Output: fmt.Sprintf("removed %d line(s) from %s", n, name)}, nil
}
