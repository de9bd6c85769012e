package team

import (
	"context"
	_ "embed"
	"fmt"
	"path/filepath"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed create_worktree.md
var createWorktreeDoc string

// createWorktree is create_worktree: the lead gives a pending task its own
// git checkout and branch (seed 001 §9). Removal is the host's (crew team
// worktree remove), never the model's.
type createWorktree struct{ r *Runtime }

// NeedsApproval: git runs in the repository the agent writes, so what
// its settings make git do is the agent's choice; a supervised
// conversation asks first, as for shell_run. (git runs sandboxed either
// way: see git.)
func (createWorktree) NeedsApproval() bool { return true }

func (createWorktree) Def() tools.Def {
	return tools.Def{Name: "create_worktree", Description: createWorktreeDoc}
}

type worktreeArgs struct {
	Name   string `json:"name" jsonschema:"the worktree's name: a-z, 0-9, _ and -; its branch is wt/<name>"`
	TaskID string `json:"task_id" jsonschema:"a pending, unowned task without a worktree"`
}

func (c createWorktree) Run(ctx context.Context, env tools.Env, a worktreeArgs) (tools.Result, error) {
	if err := checkName("worktree name", a.Name); err != nil {
		return outcome("", &Refusal{Text: err.Error()})
	}
	t, err := c.r.lead(ctx, env)
	if err != nil {
		return outcome("", err)
	}
	bindable := func(b *Board) error {
		tk := b.Tasks[a.TaskID]
		switch {
		case tk == nil:
			return refuse("Not created: there is no task %q.", a.TaskID)
		case tk.Status != events.TaskPending || tk.Owner != "":
			return refuse("Not created: %s is %s (owner %s); only a pending, unowned task gets a worktree.", a.TaskID, tk.Status, ownerOr(tk.Owner))
		case tk.Worktree != nil:
			return refuse("Not created: %s is already bound to worktree %s.", a.TaskID, tk.Worktree.Name)
		}
		for _, id := range b.Order {
			if w := b.Tasks[id].Worktree; w != nil && w.Name == a.Name {
				return refuse("Not created: the name %s is taken by %s's worktree.", a.Name, id)
			}
		}
		return nil
	}
	var ref error
	if err := t.View(ctx, func(b *Board, _ *Mailboxes) { ref = bindable(b) }); err != nil {
		return outcome("", err)
	}
	if ref != nil {
		return outcome("", ref)
	}
	wt, err := addWorktree(ctx, c.r.cfg.Sandbox, c.r.cfg.Git, env.HomeDir, env.Workspace, a.Name)
	if err != nil {
		return outcome("", err)
	}
	_, err = t.AppendBoard(ctx, func(b *Board, _ *Mailboxes) ([]events.Event, error) {
		if err := bindable(b); err != nil {
			return nil, refuse("The worktree %s was created at %s (branch %s) but not bound, so it is partial and kept for manual recovery: %s", a.Name, wt.Path, wt.Branch, err.Error())
		}
		return []events.Event{&events.TaskWorktreeBound{TaskID: a.TaskID, Name: a.Name, Path: wt.Path, Branch: wt.Branch}}, nil
	})
	if err == nil {
		c.r.kickAfter(t)
	}
	rel, _ := filepath.Rel(env.Workspace, wt.Path)
	return outcome(fmt.Sprintf("Created worktree %s at %s (branch %s) and bound it to %s: whoever claims the task works there.", a.Name, rel, wt.Branch, a.TaskID), err)
}
