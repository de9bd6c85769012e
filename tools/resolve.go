package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Resolve returns the absolute, symlink-free path that rel names inside
// workspace, or an error wrapping ErrOutsideWorkspace when it would leave
// the workspace (.., an absolute path elsewhere, a symlink pointing out).
// rel is relative to the workspace; "" and "." name the workspace itself; an
// absolute rel is accepted when it lies inside. The path need not exist:
// the existing part is resolved and the rest appended, so tools can create
// files. A dangling symlink is refused, since where it leads is unknown.
func Resolve(workspace, rel string) (string, error) {
	root, err := workspaceRoot(workspace)
	if err != nil {
		return "", err
	}
	p := rel
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	abs, err := resolveExisting(filepath.Clean(p))
	if err != nil {
		return "", err
	}
	if !within(root, abs) {
		return "", fmt.Errorf("%q: %w", rel, ErrOutsideWorkspace)
	}
	return abs, nil
}

// workspaceRoot checks workspace and returns it with symlinks resolved.
func workspaceRoot(workspace string) (string, error) {
	if !filepath.IsAbs(workspace) {
		return "", fmt.Errorf("tools: %w: %q is not absolute", ErrNoWorkspace, workspace)
	}
	root, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return "", fmt.Errorf("tools: %w: %v", ErrNoWorkspace, err)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("tools: %w: %s is not a directory", ErrNoWorkspace, workspace)
	}
	return root, nil
}

// resolveExisting resolves symlinks in the longest existing prefix of the
// clean absolute path p and appends the rest.
func resolveExisting(p string) (string, error) {
	cur, tail := p, ""
	for {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, tail), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if _, lerr := os.Lstat(cur); lerr == nil {
			return "", fmt.Errorf("%s is a symlink to a missing target", filepath.Base(cur))
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", err
		}
		tail = filepath.Join(filepath.Base(cur), tail)
		cur = parent
	}
}

func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator)) || root == "/"
}

// place is a resolved path inside an open workspace.
type place struct {
	root *os.Root // the workspace; the caller closes it
	rel  string   // symlink-free path relative to the root; "." is the root
}

// openPath resolves rel in env's workspace and opens the workspace as an
// os.Root for the operation. A confinement failure is returned as a failure
// Result; a broken workspace as an error.
func openPath(env Env, rel string) (place, *Result, error) {
	abs, err := Resolve(env.Workspace, rel)
	if errors.Is(err, ErrNoWorkspace) {
		return place{}, nil, err
	}
	if err != nil {
		res := Failf("%s", describePathErr(rel, err))
		return place{}, &res, nil
	}
	wsRoot, _ := workspaceRoot(env.Workspace) // checked by Resolve
	r, err := os.OpenRoot(wsRoot)
	if err != nil {
		return place{}, nil, fmt.Errorf("tools: open workspace: %w", err)
	}
	relPath, err := filepath.Rel(wsRoot, abs)
	if err != nil {
		r.Close()
		return place{}, nil, fmt.Errorf("tools: relative path: %w", err)
	}
	return place{root: r, rel: relPath}, nil, nil
}

// checkPath refuses a path that leaves the workspace (or, for a file to
// write, names the workspace itself) with the text Run would give. A broken
// workspace is the harness's fault, not the call's: Run reports it.
func checkPath(env Env, rel string, file bool) error {
	abs, err := Resolve(env.Workspace, rel)
	if errors.Is(err, ErrNoWorkspace) {
		return nil
	}
	if err != nil {
		return errors.New(describePathErr(rel, err))
	}
	if root, _ := workspaceRoot(env.Workspace); file && abs == root {
		return errors.New(workspaceItself(rel))
	}
	return nil
}

func workspaceItself(rel string) string {
	return fmt.Sprintf("path %q is the workspace itself; name a file", rel)
}

// describePathErr words a path error for the model without host paths.
func describePathErr(rel string, err error) string {
	switch {
	case errors.Is(err, ErrOutsideWorkspace):
		return fmt.Sprintf("path %q is outside the workspace; use a path relative to the workspace", rel)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s: no such file or directory", rel)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("%s: permission denied", rel)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s: %v", rel, pe.Err)
	}
	return fmt.Sprintf("%s: %v", rel, err)
}
