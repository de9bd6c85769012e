package tools

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
)

//go:embed workspace_read.md
var workspaceReadDescription string

const (
	defaultReadLines = 2000
	maxReadLines     = 5000
)

// WorkspaceRead reads a text file of the workspace with line numbers.
type WorkspaceRead struct{}

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (WorkspaceRead) ReadOnly() bool { return true }

func (WorkspaceRead) Def() Def {
	return Def{Name: "workspace_read", Description: workspaceReadDescription, Default: true}
}

type workspaceReadArgs struct {
	Path   string `json:"path" jsonschema:"File relative to the workspace."`
	Offset int    `json:"offset,omitempty" jsonschema:"First line to show (1-based). Default 1." schema:"minimum=1"`
	Limit  int    `json:"limit,omitempty" jsonschema:"How many lines to show. Default 2000." schema:"minimum=1,maximum=5000"`
}

func (WorkspaceRead) Run(ctx context.Context, env Env, a workspaceReadArgs) (Result, error) {
	if a.Path == "" {
		return Failf("path is required"), nil
	}
	if a.Offset < 0 || a.Limit < 0 {
		return Failf("offset and limit must be positive"), nil
	}
	offset, limit := max(a.Offset, 1), a.Limit
	if limit == 0 {
		limit = defaultReadLines
	}
	limit = min(limit, maxReadLines)

	content, res, err := readText(env, a.Path)
	if res != nil || err != nil {
		return deref(res), err
	}
	if content == "" {
		return Result{Output: a.Path + " is empty"}, nil
	}
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	if offset > len(lines) {
		return Failf("offset %d is past the end of %s (%d lines)", offset, a.Path, len(lines)), nil
	}
	end := min(offset-1+limit, len(lines))
	var b strings.Builder
	for i := offset - 1; i < end; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, cutLine(strings.TrimSuffix(lines[i], "\r"), maxLineChars))
	}
	if offset > 1 || end < len(lines) {
		fmt.Fprintf(&b, "[lines %d–%d of %d", offset, end, len(lines))
		if end < len(lines) {
			fmt.Fprintf(&b, "; call again with offset %d to read on", end+1)
		}
		b.WriteString("]\n")
	}
	return Result{Output: strings.TrimSuffix(b.String(), "\n")}, nil
}

// readText reads a workspace file that must be UTF-8 text of a sane size.
func readText(env Env, rel string) (string, *Result, error) {
	data, res, err := readRegular(env, rel, maxFileBytes, "; use workspace_grep, or shell_run with head, tail or sed")
	if res != nil || err != nil {
		return "", res, err
	}
	if binary(data) {
		r := Failf("%s is a binary file (or not UTF-8 text); it cannot be shown as text", rel)
		return "", &r, nil
	}
	return string(data), nil, nil
}
