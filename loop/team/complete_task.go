package team

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed complete_task.md
var completeTaskDoc string

// completeTask is complete_task: the owner records its in-progress task's
// result. A refused completion changes nothing: the task stays the
// member's, and so does its folder; a completed one keeps the folder until
// the turn ends (seed 001 §9).
type completeTask struct{ r *Runtime }

func (completeTask) Def() tools.Def {
	return tools.Def{Name: "complete_task", Description: completeTaskDoc}
}

type completeArgs struct {
	TaskID string `json:"task_id"`
	Result string `json:"result" jsonschema:"what was done and how it was checked"`
}

func (c completeTask) Run(ctx context.Context, env tools.Env, a completeArgs) (tools.Result, error) {
	t, seat, err := c.r.member(ctx, env)
	if err != nil {
		return outcome("", err)
	}
	_, err = t.AppendBoard(ctx, func(b *Board, _ *Mailboxes) ([]events.Event, error) {
		tk := b.Tasks[a.TaskID]
		switch {
		case tk == nil:
			return nil, refuse("Not completed: there is no task %q.", a.TaskID)
		case tk.Owner != seat.Member || tk.Status != events.TaskInProgress:
			return nil, refuse("Not completed: %s is not your task in progress (%s, owner %s). Nothing changed.", a.TaskID, tk.Status, ownerOr(tk.Owner))
		case strings.TrimSpace(a.Result) == "":
			return nil, refuse("Not completed: give the result (what was done, how it was checked). The task is still yours.")
		}
		return []events.Event{&events.TaskCompleted{TaskID: a.TaskID, Owner: seat.Member, Result: strings.TrimSpace(a.Result)}}, nil
	})
	if err == nil {
		c.r.kickAfter(t)
	}
	return outcome(fmt.Sprintf("Completed %s. Your working folder stays until this turn ends; finish with a short report for the lead.", a.TaskID), err)
}
