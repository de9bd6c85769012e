package team

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/my-agent-crew/crew/tools/shell"
)

// git runs the git commands of worktrees: create_worktree (the lead's) and
// the host's removal. The repository is the lead's workspace, which the
// agent writes: its .git/config, hooks and attributes are the agent's
// words, so git runs like any command the agent causes — through
// tools/shell, isolated from the home, with no network and writes only
// under the repository and the new worktree — and with nothing the
// repository configures to run: no system or global config, no hooks, no
// fsmonitor, no filter driver, no submodule recursion, no transport but
// local files.
type git struct {
	box   *shell.Sandbox // where it runs
	bin   string
	view  *shell.View // what git sees of the home; nil: the home is not hidden
	write []string    // where git may write
	// ceiling is where git stops looking for a repository upwards
	// (GIT_CEILING_DIRECTORIES): the folder above the repository, so a
	// repository around the workspace is never the one written.
	ceiling string
}

// gitFlags come before every git command; they win over the repository's
// config (command-line scope).
var gitFlags = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "protocol.allow=never",
	"-c", "protocol.file.allow=always",
	"-c", "submodule.recurse=false",
}

// gitEnv is git's environment: the shell's filtered one without any
// system or global config.
func gitEnv() []string {
	env := shell.Environ(os.Environ())
	return append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C")
}

// newGit is git for a repository at repo: it sees of the home what view
// shows, plus repo, and writes only under repo and the extra paths.
func newGit(box *shell.Sandbox, bin, home, repo string, extra ...string) git {
	g := git{box: box, bin: bin, write: append([]string{repo}, extra...), ceiling: filepath.Dir(repo)}
	if home != "" {
		g.view = &shell.View{Home: home}
		for _, w := range g.write {
			g.view.Grant(w)
		}
	}
	return g
}

func (g git) run(ctx context.Context, dir string, args ...string) (string, error) {
	return g.runEnv(ctx, dir, nil, args...)
}

func (g git) runEnv(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	argv := append(append([]string{g.bin}, gitFlags...), "-C", dir)
	var out bytes.Buffer
	res, err := g.box.Run(ctx, shell.Command{
		Exec:    append(argv, args...),
		Dir:     dir,
		Env:     append(append(gitEnv(), "GIT_CEILING_DIRECTORIES="+g.ceiling), env...),
		Stdout:  &out,
		View:    g.view,
		Sandbox: &shell.Policy{WritePaths: g.write, Network: false},
	})
	if errors.Is(err, shell.ErrNoIsolation) || errors.Is(err, shell.ErrNoSandbox) {
		return "", fmt.Errorf("git %s: not run: git runs only sandboxed, but %v", args[0], err)
	}
	if err != nil {
		return "", fmt.Errorf("git %s: %w", args[0], err)
	}
	if res.ExitCode != 0 || res.TimedOut {
		msg := strings.TrimSpace(res.Text)
		if msg == "" {
			msg = fmt.Sprintf("exit code %d", res.ExitCode)
		}
		return out.String(), fmt.Errorf("git %s: %s", args[0], msg)
	}
	return out.String(), nil
}

// noFilters is the environment that switches off every filter driver the
// repository's config names (filter.<name>.process, smudge and clean
// emptied, required false), so a checkout runs none of them. The
// sandbox would contain one; this keeps it from running at all.
func (g git) noFilters(ctx context.Context, repo string) []string {
	out, err := g.run(ctx, repo, "config", "--null", "--name-only", "--get-regexp", `^filter\.`)
	if err != nil {
		return nil
	}
	var names []string
	for _, key := range strings.Split(out, "\x00") {
		rest, ok := strings.CutPrefix(key, "filter.")
		i := strings.LastIndexByte(rest, '.')
		if !ok || i <= 0 {
			continue
		}
		if name := rest[:i]; !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	var env []string
	n := 0
	for _, name := range names {
		for _, kv := range [][2]string{{"process", ""}, {"smudge", ""}, {"clean", ""}, {"required", "false"}} {
			env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=filter.%s.%s", n, name, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, kv[1]))
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return append(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", n))
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

// addWorktree creates .worktrees/<name> of the workspace on branch
// wt/<name>, git seeing of the home only the workspace and writing only
// there (see add).
func addWorktree(ctx context.Context, box *shell.Sandbox, bin, home, workspace, name string) (Worktree, error) {
	ws, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return Worktree{Name: name, Branch: "wt/" + name}, err
	}
	return newGit(box, bin, home, ws).add(ctx, ws, name)
}

// add creates .worktrees/<name> on branch wt/<name>, after checking the
// repository, the path, the branch and the registry. A git failure after
// part of it was made is a refusal saying "partial" and what is kept.
func (g git) add(ctx context.Context, ws, name string) (Worktree, error) {
	wt := Worktree{Name: name, Branch: "wt/" + name}
	top, err := g.run(ctx, ws, "rev-parse", "--show-toplevel")
	if err != nil {
		return wt, refuse("Not created: the workspace is not a git repository (%v).", err)
	}
	repo := strings.TrimSpace(top)
	if !within(ws, repo) {
		return wt, refuse("Not created: the workspace is not the top of its git repository (%s is); create_worktree writes only in the workspace.", repo)
	}
	if _, err := g.run(ctx, repo, "rev-parse", "--verify", "--quiet", "HEAD"); err != nil {
		return wt, refuse("Not created: the repository has no commit yet, so there is nothing to check out.")
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
		exclude(repo, strings.TrimSpace(ex))
	}
	if _, err := g.runEnv(ctx, repo, g.noFilters(ctx, repo), "worktree", "add", "-b", wt.Branch, wt.Path, "HEAD"); err != nil {
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

// within reports whether path is dir or beneath it (lexically).
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// exclude adds .worktrees/ to the repository's info/exclude once. The
// server writes it, so only through the repository (os.Root): a .git file
// naming a git folder elsewhere gets nothing written there.
func exclude(repo, path string) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(repo, path)
	}
	rel, err := filepath.Rel(repo, path)
	if err != nil || !within(repo, path) {
		return
	}
	root, err := os.OpenRoot(repo)
	if err != nil {
		return
	}
	defer root.Close()
	data, err := root.ReadFile(rel)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return
	}
	if strings.Contains(string(data), "\n.worktrees/\n") || strings.HasPrefix(string(data), ".worktrees/\n") {
		return
	}
	root.MkdirAll(filepath.Dir(rel), 0o755)
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	root.WriteFile(rel, append(data, ".worktrees/\n"...), 0o644)
}
