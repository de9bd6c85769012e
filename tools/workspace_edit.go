package tools

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/events"
)

//go:embed workspace_edit.md
var workspaceEditDescription string

// WorkspaceEdit replaces exact text in a workspace file.
type WorkspaceEdit struct {
	Secrets  *events.Redactor
	Proposer Proposer
}

func (WorkspaceEdit) NeedsApproval() bool { return true }

func (WorkspaceEdit) Def() Def {
	return Def{Name: "workspace_edit", Description: workspaceEditDescription, Default: true}
}

type editArgs struct {
	Path       string  `json:"path" jsonschema:"File relative to the workspace."`
	Old        string  `json:"old" jsonschema:"Exact text to replace, including whitespace and indentation."`
	New        *string `json:"new" jsonschema:"Replacement text (may be empty to delete)."`
	ReplaceAll bool    `json:"replace_all,omitempty" jsonschema:"Replace every occurrence instead of exactly one. Default false."`
}

// valid refuses an edit that says no change.
func (a editArgs) valid() *Result {
	fail := func(format string, v ...any) *Result { res := Failf(format, v...); return &res }
	switch {
	case a.Path == "" || a.New == nil:
		return fail("path, old and new are required")
	case a.Old == "":
		return fail("old must not be empty; use workspace_write to create a file")
	case a.Old == *a.New:
		return fail("old and new are the same; nothing to change")
	}
	return nil
}

// Check refuses what Run would refuse before reading the file: bad
// arguments, a path outside the workspace.
func (WorkspaceEdit) Check(env Env, a editArgs) error {
	if res := a.valid(); res != nil {
		return refusal(*res)
	}
	if _, ok := PersonaFile(env, a.Path); ok {
		return nil // a proposal, see Run
	}
	return checkPath(env, a.Path, false)
}

// AskWhen asks, even when autonomous, for an edit that changes what runs
// when git or a shell opens the folder (RunsWhenOpened).
func (WorkspaceEdit) AskWhen(env Env, a editArgs) string {
	if a.valid() != nil {
		return ""
	}
	return RunsWhenOpenedReason(env, a.Path)
}

// AllowWhen: an edit of the agent's AGENTS.md or SOUL.md only files a
// proposal for the owner, which changes nothing, so it need not ask.
func (WorkspaceEdit) AllowWhen(env Env, a editArgs) bool {
	if a.valid() != nil {
		return false
	}
	_, ok := PersonaFile(env, a.Path)
	return ok
}

// replaced is content with a's replacement made, or the failure to tell.
func (a editArgs) replaced(content string) (string, int, *Result) {
	n := strings.Count(content, a.Old)
	switch {
	case n == 0:
		res := Failf("old text not found in %s; read the file again and copy the text exactly, including whitespace", a.Path)
		return "", 0, &res
	case n > 1 && !a.ReplaceAll:
		res := Failf("old text occurs %d times in %s; include more surrounding text to make it unique, or set replace_all", n, a.Path)
		return "", 0, &res
	}
	return strings.ReplaceAll(content, a.Old, *a.New), n, nil // n == 1 or replace_all
}

func (t WorkspaceEdit) Run(ctx context.Context, env Env, a editArgs) (Result, error) {
	if res := a.valid(); res != nil {
		return *res, nil
	}
	if name, ok := PersonaFile(env, a.Path); ok {
		old, err := readPersona(env, name)
		if err != nil {
			return Result{}, err
		}
		updated, _, res := a.replaced(old)
		if res != nil {
			return *res, nil
		}
		return proposePersona(ctx, t.Proposer, env, "workspace_edit", name, old, updated)
	}
	content, res, err := readText(env, a.Path)
	if res != nil || err != nil {
		return deref(res), err
	}
	updated, n, res := a.replaced(content)
	if res != nil {
		return *res, nil
	}

	pl, res, err := openPath(env, a.Path)
	if res != nil || err != nil {
		return deref(res), err
	}
	defer pl.root.Close()
	if err := WriteAtomic(t.Secrets, pl.root, pl.rel, []byte(updated), 0o644); err != nil {
		return Failf("cannot write %s: %s", a.Path, describeWriteErr(err)), nil
	}
	if n == 1 {
		return Result{Output: fmt.Sprintf("replaced 1 occurrence in %s", a.Path)}, nil
	}
	return Result{Output: fmt.Sprintf("replaced %d occurrences in %s", n, a.Path)}, nil
}
