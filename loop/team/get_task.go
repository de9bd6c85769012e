package team

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/my-agent-crew/crew/tools"
)

//go:embed get_task.md
var getTaskDoc string

// getTask is get_task: one task in full.
type getTask struct{ r *Runtime }

func (getTask) Def() tools.Def {
	return tools.Def{Name: "get_task", Description: getTaskDoc}
}

type getTaskArgs struct {
	TaskID string `json:"task_id"`
}

func (g getTask) Run(ctx context.Context, env tools.Env, a getTaskArgs) (tools.Result, error) {
	t, _, err := g.r.anyone(ctx, env)
	if err != nil {
		return outcome("", err)
	}
	var text string
	var ref error
	err = t.View(ctx, func(b *Board, _ *Mailboxes) {
		tk := b.Tasks[a.TaskID]
		if tk == nil {
			ref = refuse("There is no task %q (list_tasks shows them).", a.TaskID)
			return
		}
		ready := len(b.Blockers(tk)) == 0 && tk.Status == "pending" && tk.Owner == ""
		text = taskLine(b, tk, ready)
		if tk.Description != "" {
			text += "\n\n" + tk.Description
		}
		if len(tk.BlockedBy) > 0 {
			text += fmt.Sprintf("\n\nBlocked by (all): %v", tk.BlockedBy)
		}
		if tk.Worktree != nil {
			text += fmt.Sprintf("\n\nWorktree %s: %s (branch %s)", tk.Worktree.Name, tk.Worktree.Path, tk.Worktree.Branch)
		}
		if tk.Result != "" {
			text += "\n\nResult: " + tk.Result
		}
	})
	if err == nil {
		err = ref
	}
	return outcome(text, err)
}
