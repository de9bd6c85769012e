package tools

import (
	"context"
	_ "embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

//go:embed workspace_glob.md
var workspaceGlobDescription string

const maxGlobResults = 1000

// WorkspaceGlob finds workspace files by a doublestar pattern.
type WorkspaceGlob struct{}

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (WorkspaceGlob) ReadOnly() bool { return true }

func (WorkspaceGlob) Def() Def {
	return Def{Name: "workspace_glob", Description: workspaceGlobDescription, Default: true}
}

type workspaceGlobArgs struct {
	Pattern string `json:"pattern" jsonschema:"Pattern relative to the workspace, e.g. **/*.go or docs/{a,b}/*.md"`
}

func (WorkspaceGlob) Run(ctx context.Context, env Env, a workspaceGlobArgs) (Result, error) {
	g, err := compileGlob(a.Pattern)
	if err != nil {
		return Failf("invalid pattern %q: %v", a.Pattern, err), nil
	}
	pl, res, err := openPath(env, "")
	if res != nil || err != nil {
		return deref(res), err
	}
	defer pl.root.Close()

	var found []string
	more := false
	err = walk(ctx, pl.root.FS(), ".", strings.Contains(a.Pattern, ".git"), g.MayMatchBelow, func(p string, d fs.DirEntry) bool {
		if !g.Match(p) {
			return true
		}
		if len(found) == maxGlobResults {
			more = true
			return false
		}
		found = append(found, p)
		return true
	})
	if err != nil {
		return Result{}, err
	}
	if len(found) == 0 {
		return Result{Output: fmt.Sprintf("no files match %q", a.Pattern)}, nil
	}
	slices.Sort(found) // the walk puts "a/b/x" before "a/b.go"
	out := strings.Join(found, "\n")
	if more {
		out += fmt.Sprintf("\n[stopped at %d files; use a narrower pattern]", maxGlobResults)
	}
	return Result{Output: out}, nil
}

// walk visits the non-directory entries beneath dir in lexical order,
// without following symlinked directories. Directories named .git are
// skipped unless withGit; enter decides whether to descend into a directory;
// visit returns false to stop. Only a cancelled ctx is an error: unreadable
// directories are skipped.
func walk(ctx context.Context, fsys fs.FS, dir string, withGit bool, enter func(string) bool, visit func(string, fs.DirEntry) bool) error {
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if d != nil && d.IsDir() && p != dir {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if p != dir && ((d.Name() == ".git" && !withGit) || !enter(p)) {
				return fs.SkipDir
			}
			return nil
		}
		if !visit(p, d) {
			return fs.SkipAll
		}
		return nil
	})
	return err
}
