package tools

import (
	"context"
	_ "embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
)

//go:embed workspace_grep.md
var workspaceGrepDescription string

const (
	maxGrepMatches   = 200
	maxGrepLineChars = 300
)

// WorkspaceGrep searches workspace files with a regular expression.
type WorkspaceGrep struct{}

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (WorkspaceGrep) ReadOnly() bool { return true }

func (WorkspaceGrep) Def() Def {
	return Def{Name: "workspace_grep", Description: workspaceGrepDescription, Default: true}
}

type workspaceGrepArgs struct {
	Pattern string `json:"pattern" jsonschema:"Go regular expression (RE2), e.g. func \\w+Handler or (?i)todo"`
	Path    string `json:"path,omitempty" jsonschema:"File or directory to search, relative to the workspace. Default the whole workspace."`
	Glob    string `json:"glob,omitempty" jsonschema:"Only search files matching this pattern, e.g. *.go or src/**/*.ts"`
}

func (WorkspaceGrep) Run(ctx context.Context, env Env, a workspaceGrepArgs) (Result, error) {
	if a.Pattern == "" {
		return Failf("pattern is required"), nil
	}
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return Failf("invalid regular expression: %v", err), nil
	}
	var g *glob
	if a.Glob != "" {
		if g, err = compileGlob(a.Glob); err != nil {
			return Failf("invalid glob %q: %v", a.Glob, err), nil
		}
	}
	pl, res, err := openPath(env, a.Path)
	if res != nil || err != nil {
		return deref(res), err
	}
	defer pl.root.Close()
	fsys := pl.root.FS()
	if _, err := fs.Stat(fsys, pl.rel); err != nil {
		return Failf("%s", describePathErr(a.Path, err)), nil
	}

	var b strings.Builder
	matches, skipped := 0, 0
	more := false
	search := func(p string, _ fs.DirEntry) bool {
		if g != nil {
			target := p
			if !strings.Contains(a.Glob, "/") {
				target = path.Base(p)
			}
			if !g.Match(target) {
				return true
			}
		}
		fi, err := fs.Stat(fsys, p) // follows symlinks, within the workspace only
		if err != nil || !fi.Mode().IsRegular() {
			return true
		}
		if fi.Size() > maxFileBytes {
			skipped++
			return true
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return true
		}
		if binary(data) {
			skipped++
			return true
		}
		for i, line := range strings.Split(string(data), "\n") {
			if !re.MatchString(line) {
				continue
			}
			if matches == maxGrepMatches {
				more = true
				return false
			}
			matches++
			fmt.Fprintf(&b, "%s:%d: %s\n", p, i+1, cutLine(strings.TrimSuffix(line, "\r"), maxGrepLineChars))
		}
		return true
	}
	err = walk(ctx, fsys, pl.rel, strings.Contains(a.Path+a.Glob, ".git"), func(string) bool { return true }, search)
	if err != nil {
		return Result{}, err
	}
	if matches == 0 {
		out := "no matches"
		if skipped > 0 {
			out += fmt.Sprintf(" (%d binary or oversized files skipped)", skipped)
		}
		return Result{Output: out}, nil
	}
	if more {
		fmt.Fprintf(&b, "[stopped at %d matches; narrow the pattern, path or glob]\n", maxGrepMatches)
	}
	if skipped > 0 {
		fmt.Fprintf(&b, "[%d binary or oversized files skipped]\n", skipped)
	}
	return Result{Output: strings.TrimSuffix(b.String(), "\n")}, nil
}
