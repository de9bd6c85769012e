package team

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed update_task.md
var updateTaskDoc string

// updateTask is update_task: the lead links tasks and sets a status; only
// the lead changes the graph (seed 001 §4). A teammate may only give its
// own in-progress task back to the board (status pending).
type updateTask struct{ r *Runtime }

func (updateTask) Def() tools.Def {
	return tools.Def{Name: "update_task", Description: updateTaskDoc}
}

type updateArgs struct {
	TaskID       string   `json:"task_id"`
	AddBlockedBy []string `json:"addBlockedBy,omitempty" jsonschema:"ids of tasks that must be completed before this one can be claimed"`
	Status       string   `json:"status,omitempty" jsonschema:"pending gives an in-progress task back to the board; completed closes it" schema:"enum=pending|completed"`
}

func (u updateTask) Run(ctx context.Context, env tools.Env, a updateArgs) (tools.Result, error) {
	t, who, err := u.r.anyone(ctx, env)
	if err != nil {
		return outcome("", err)
	}
	var text string
	_, err = t.AppendBoard(ctx, func(b *Board, _ *Mailboxes) ([]events.Event, error) {
		tk := b.Tasks[a.TaskID]
		if tk == nil {
			return nil, refuse("Not run: there is no task %q (list_tasks shows them).", a.TaskID)
		}
		if who != Lead {
			switch {
			case len(a.AddBlockedBy) > 0 || a.Status != events.TaskPending:
				return nil, refuse("Not run: only the lead changes the task graph; a teammate may only give its own task back (status pending). Ask the lead with send_message.")
			case tk.Owner != who || tk.Status != events.TaskInProgress:
				return nil, refuse("Not run: %s is not your task in progress; you may only give back your own.", a.TaskID)
			}
			text = fmt.Sprintf("Gave %s back to the board: it is pending and unowned; claim another with claim_task.", a.TaskID)
			return []events.Event{&events.TaskReleased{TaskID: a.TaskID, Owner: who, Reason: "given back"}}, nil
		}
		for _, by := range a.AddBlockedBy {
			switch {
			case b.Tasks[by] == nil:
				return nil, refuse("Not run: there is no task %q to block %s by; create it first.", by, a.TaskID)
			case by == a.TaskID:
				return nil, refuse("Not run: a task cannot block itself.")
			case b.cycle(a.TaskID, by):
				return nil, refuse("Not run: %s already depends on %s; blocking it by %s would make a cycle.", by, a.TaskID, by)
			}
		}
		switch a.Status {
		case "", events.TaskPending, events.TaskDone:
		default:
			return nil, refuse("Not run: status is pending or completed.")
		}
		if len(a.AddBlockedBy) == 0 && a.Status == "" {
			return nil, refuse("Not run: give addBlockedBy, status, or both.")
		}
		text = fmt.Sprintf("Updated %s.", a.TaskID)
		if len(a.AddBlockedBy) > 0 {
			text += " Blocked by: " + strings.Join(append(append([]string{}, tk.BlockedBy...), a.AddBlockedBy...), ", ") + "."
		}
		if a.Status != "" {
			text += " Status: " + a.Status + "."
		}
		return []events.Event{&events.TaskUpdated{TaskID: a.TaskID, AddBlockedBy: a.AddBlockedBy, Status: a.Status}}, nil
	})
	if err == nil {
		if who != Lead {
			u.r.release(env.Conversation) // its folder went with the task
		}
		u.r.kickAfter(t)
	}
	return outcome(text, err)
}
