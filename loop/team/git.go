package team

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// git runs the git commands of worktrees: create_worktree (the lead's) and
// the host's removal. The repository is the lead's workspace.
type git struct{ bin string }

func (g git) run(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, g.bin, append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return out.String(), fmt.Errorf("git %s: %s", args[0], msg)
	}
	return out.String(), nil
}

// registered reports whether path is in the repository's worktree list.
func (g git) registered(ctx context.Context, repo, path string) (bool, error) {
	out, err := g.run(ctx, repo, "worktree", "list", "--porcelain")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok && filepath.Clean(p) == filepath.Clean(path) {
			return true, nil
		}
	}
	return false, nil
}

func (g git) branchExists(ctx context.Context, repo, branch string) bool {
	_, err := g.run(ctx, repo, "show-ref", "--verify", "--quiet", "refs/heads/"+branch)
	return err == nil
}

// add creates .worktrees/<name> on branch wt/<name>, after checking the
// repository, the path, the branch and the registry. A git failure after
// part of it was made is a refusal saying "partial" and what is kept.
func (g git) add(ctx context.Context, workspace, name string) (Worktree, error) {
	wt := Worktree{Name: name, Branch: "wt/" + name}
	top, err := g.run(ctx, workspace, "rev-parse", "--show-toplevel")
	if err != nil {
		return wt, refuse("Not created: the workspace is not a git repository (%v).", err)
	}
	repo := strings.TrimSpace(top)
	if _, err := g.run(ctx, repo, "rev-parse", "--verify", "--quiet", "HEAD"); err != nil {
		return wt, refuse("Not created: the repository has no commit yet, so there is nothing to check out.")
	}
	ws, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return wt, err
	}
	wt.Path = filepath.Join(ws, ".worktrees", name)
	if _, err := os.Lstat(wt.Path); err == nil {
		return wt, refuse("Not created: %s exists already.", wt.Path)
	}
	if g.branchExists(ctx, repo, wt.Branch) {
		return wt, refuse("Not created: the branch %s exists already (a removed worktree keeps its branch); choose another name.", wt.Branch)
	}
	if reg, err := g.registered(ctx, repo, wt.Path); err != nil || reg {
		return wt, refuse("Not created: %s is in git's worktree registry already (git worktree prune clears stale entries).", wt.Path)
	}
	// The checkouts under .worktrees are not the repository's own files.
	if ex, err := g.run(ctx, repo, "rev-parse", "--git-path", "info/exclude"); err == nil {
		g.exclude(repo, strings.TrimSpace(ex))
	}
	if _, err := g.run(ctx, repo, "worktree", "add", "-b", wt.Branch, wt.Path, "HEAD"); err != nil {
		var kept []string
		if g.branchExists(ctx, repo, wt.Branch) {
			kept = append(kept, "branch "+wt.Branch)
		}
		if reg, _ := g.registered(ctx, repo, wt.Path); reg {
			kept = append(kept, "the registered checkout "+wt.Path)
		} else if _, serr := os.Lstat(wt.Path); serr == nil {
			kept = append(kept, "the folder "+wt.Path)
		}
		if len(kept) > 0 {
			return wt, refuse("create_worktree failed part-way, so it is partial: %v. Kept for manual recovery: %s. The task stays unbound.", err, strings.Join(kept, ", "))
		}
		return wt, refuse("Not created: %v. Nothing was left behind; the task stays unbound.", err)
	}
	return wt, nil
}

// exclude adds .worktrees/ to the repository's info/exclude once.
func (g git) exclude(repo, path string) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(repo, path)
	}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return
	}
	if strings.Contains(string(data), "\n.worktrees/\n") || strings.HasPrefix(string(data), ".worktrees/\n") {
		return
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	os.WriteFile(path, append(data, ".worktrees/\n"...), 0o644)
}
