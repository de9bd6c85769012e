package team

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/refusal"
	"github.com/my-agent-crew/crew/loop"
)

// Errors of the host's worktree removal, mapped to HTTP statuses by the
// web gateway and to exit codes by the CLI.
var (
	ErrNoWorktree    = refusal.ErrNoWorktree
	ErrWorktreeInUse = refusal.ErrWorktreeInUse
	ErrWorktreeDirty = refusal.ErrWorktreeDirty
	ErrAmbiguous     = refusal.ErrAmbiguousWorktree
)

// FindWorktree names the teams whose board binds a task to worktree name.
func FindWorktree(ctx context.Context, log loop.Reader, name string) ([]string, error) {
	bound := map[string]bool{}
	for env, err := range log.Read(ctx, events.Root+".team.>", 0) {
		if err != nil {
			return nil, err
		}
		e, err := env.Decode()
		if err != nil {
			return nil, err
		}
		team := events.ScopeOf(env.Subject).ID()
		switch e := e.(type) {
		case *events.TaskWorktreeBound:
			if e.Name == name {
				bound[team] = true
			}
		case *events.TaskWorktreeRemoved:
			if e.Name == name {
				delete(bound, team)
			}
		}
	}
	return slices.Sorted(maps.Keys(bound)), nil
}

// RemoveWorktree is the host's removal of a task's worktree (seed 001
// §10): refused while its task is pending or in progress or a teammate
// holds its folder for a turn, and — unless discard — while the checkout
// has any tracked, untracked or ignored change. The wt/<name> branch is
// kept. The binding goes once the checkout is gone.
func (r *Runtime) RemoveWorktree(ctx context.Context, team, name string, discard bool) (string, error) {
	t, err := r.Team(ctx, team)
	if err != nil {
		return "", err
	}
	var task Task
	var found bool
	t.View(ctx, func(b *Board, _ *Mailboxes) {
		for _, id := range b.Order {
			if tk := b.Tasks[id]; tk.Worktree != nil && tk.Worktree.Name == name {
				task, found = *tk, true
				wt := *tk.Worktree
				task.Worktree = &wt
			}
		}
	})
	if !found {
		return "", fmt.Errorf("%w: %q is bound to no task of team %s", ErrNoWorktree, name, team)
	}
	wt := task.Worktree
	if task.Status != events.TaskDone {
		return "", fmt.Errorf("%w: its task %s is %s (owner %s); complete it (or set it completed) first", ErrWorktreeInUse, task.ID, task.Status, ownerOr(task.Owner))
	}
	r.mu.Lock()
	for conv, l := range r.leases {
		if l.dir == wt.Path {
			r.mu.Unlock()
			return "", fmt.Errorf("%w: the teammate of %s still works there this turn", ErrWorktreeInUse, conv)
		}
	}
	r.mu.Unlock()
	repo := filepath.Dir(filepath.Dir(wt.Path))
	g := newGit(r.cfg.Sandbox, r.cfg.Git, r.cfg.Home, repo)
	if _, err := os.Stat(wt.Path); errors.Is(err, os.ErrNotExist) {
		// Gone already: forget it in git and on the board.
		g.run(ctx, repo, "worktree", "prune")
	} else {
		if !discard {
			out, err := g.run(ctx, wt.Path, "status", "--porcelain", "--ignored", "--untracked-files=all")
			if err != nil {
				return "", err
			}
			if changes := strings.TrimSpace(out); changes != "" {
				return "", fmt.Errorf("%w (tracked, untracked or ignored), kept; commit or copy what you need, or remove with --discard:\n%s", ErrWorktreeDirty, changes)
			}
		}
		args := []string{"worktree", "remove"}
		if discard {
			args = append(args, "--force", "--force")
		}
		if _, err := g.run(ctx, repo, append(args, wt.Path)...); err != nil {
			return "", err
		}
	}
	_, err = t.AppendBoard(ctx, func(b *Board, _ *Mailboxes) ([]events.Event, error) {
		if tk := b.Tasks[task.ID]; tk == nil || tk.Worktree == nil || tk.Worktree.Name != name {
			return nil, nil
		}
		return []events.Event{&events.TaskWorktreeRemoved{TaskID: task.ID, Name: name, Discarded: discard}}, nil
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("removed worktree %s (%s); branch %s is kept", name, wt.Path, wt.Branch), nil
}

// Remove removes worktree name of team — or, with team empty, of the one
// team that binds it.
func (r *Runtime) Remove(ctx context.Context, name, team string, discard bool) (string, error) {
	if team == "" {
		teams, err := FindWorktree(ctx, r.cfg.Log, name)
		if err != nil {
			return "", err
		}
		switch len(teams) {
		case 0:
			return "", fmt.Errorf("%w: no task is bound to a worktree named %q", ErrNoWorktree, name)
		case 1:
			team = teams[0]
		default:
			return "", fmt.Errorf("%w: %s; name the team (its lead's conversation)", ErrAmbiguous, strings.Join(teams, ", "))
		}
	}
	return r.RemoveWorktree(ctx, team, name, discard)
}
