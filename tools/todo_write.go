package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed todo_write.md
var todoWriteDescription string

// TodoItem is one line of a todo_write checklist.
type TodoItem struct {
	Text string `json:"text"`
	Done bool   `json:"done"`
}

type todoWriteArgs struct {
	Items []TodoItem `json:"items" schema:"maxItems=50"`
}

// TodoWrite is todo_write (seed 004, "Planning và Tasks"): a light
// checklist the agent keeps for the current session, replaced whole at
// each call and shown on the run card. It is not the team's task board.
type TodoWrite struct{}

func (TodoWrite) Def() Def {
	return Def{Name: "todo_write", Description: todoWriteDescription, Default: true}
}

// TodoItems decodes a todo_write call's checklist.
func TodoItems(args json.RawMessage) ([]TodoItem, error) {
	a, err := Decode[todoWriteArgs]("todo_write", args)
	if err != nil {
		return nil, err
	}
	return a.items()
}

// items are a's checklist, or why it is refused.
func (a todoWriteArgs) items() ([]TodoItem, error) {
	if len(a.Items) > 50 {
		return nil, fmt.Errorf("todo_write: at most 50 items")
	}
	for i, it := range a.Items {
		if strings.TrimSpace(it.Text) == "" {
			return nil, fmt.Errorf("todo_write: item %d has no text", i+1)
		}
	}
	return a.Items, nil
}

func (TodoWrite) Run(ctx context.Context, env Env, a todoWriteArgs) (Result, error) {
	items, err := a.items()
	if err != nil {
		return Failf("%v", err), nil
	}
	done := 0
	var b strings.Builder
	for _, it := range items {
		mark := "[ ]"
		if it.Done {
			mark, done = "[x]", done+1
		}
		fmt.Fprintf(&b, "\n%s %s", mark, it.Text)
	}
	return Result{Output: fmt.Sprintf("Checklist: %d of %d done.%s", done, len(items), b.String()),
		Meta: map[string]any{"todo": items}}, nil
}
