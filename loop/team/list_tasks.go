package team

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/tools"
)

//go:embed list_tasks.md
var listTasksDoc string

// listTasks is list_tasks: a snapshot of the board (seed 001 §7: discovery
// is a snapshot; claim_task decides).
type listTasks struct{ r *Runtime }

func (listTasks) Def() tools.Def {
	return tools.Def{Name: "list_tasks", Description: listTasksDoc}
}

func (l listTasks) Run(ctx context.Context, env tools.Env, _ noArgs) (tools.Result, error) {
	t, _, err := l.r.anyone(ctx, env)
	if err != nil {
		return outcome("", err)
	}
	var b strings.Builder
	err = t.View(ctx, func(bd *Board, _ *Mailboxes) {
		if len(bd.Order) == 0 {
			b.WriteString("The board has no tasks.")
			return
		}
		ready := map[string]bool{}
		for _, tk := range bd.Ready() {
			ready[tk.ID] = true
		}
		for _, id := range bd.Order {
			b.WriteString(taskLine(bd, bd.Tasks[id], ready[id]) + "\n")
		}
	})
	return outcome(strings.TrimSpace(b.String()), err)
}

// taskLine is one task as the tools show it.
func taskLine(b *Board, t *Task, ready bool) string {
	line := fmt.Sprintf("%s [%s] %s", t.ID, t.Status, t.Subject)
	if t.Owner != "" {
		line += " — owner " + t.Owner
	}
	if open := b.Blockers(t); len(open) > 0 {
		line += " — blocked by " + strings.Join(open, ", ")
	} else if ready {
		line += " — ready"
	}
	if t.Worktree != nil {
		line += " — worktree " + t.Worktree.Name
	}
	return line
}
