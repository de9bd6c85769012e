package team

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed create_task.md
var createTaskDoc string

// createTask is create_task: the lead adds a node to the board and gets
// its runtime id (seed 001 §intro: create every task first, then link).
type createTask struct{ r *Runtime }

func (createTask) Def() tools.Def {
	return tools.Def{Name: "create_task", Description: createTaskDoc}
}

type createTaskArgs struct {
	Subject     string `json:"subject" jsonschema:"a short title"`
	Description string `json:"description,omitempty" jsonschema:"what done means, for whoever claims it"`
}

func (c createTask) Run(ctx context.Context, env tools.Env, a createTaskArgs) (tools.Result, error) {
	if strings.TrimSpace(a.Subject) == "" {
		return outcome("", refuse("Not run: give the task a subject."))
	}
	t, err := c.r.lead(ctx, env)
	if err != nil {
		return outcome("", err)
	}
	id := newID("task_")
	_, err = t.AppendBoard(ctx, func(b *Board, _ *Mailboxes) ([]events.Event, error) {
		if len(b.Order) >= 64 {
			return nil, refuse("Not run: the board holds 64 tasks, the most allowed.")
		}
		return []events.Event{&events.TaskCreated{TaskID: id, Subject: strings.TrimSpace(a.Subject), Description: strings.TrimSpace(a.Description)}}, nil
	})
	if err == nil {
		c.r.kickAfter(t)
	}
	return outcome(fmt.Sprintf("Created %s: %s (pending). Link blockers with update_task(task_id=%q, addBlockedBy=[...]) once every task exists.", id, a.Subject, id), err)
}
