package tools

import (
	"context"
	_ "embed"
	"encoding/json"

	"fmt"
	"github.com/my-agent-crew/crew/events"
	"strings"
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
	return Def{Name: "workspace_edit", Description: workspaceEditDescription, Default: true, Params: params(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File relative to the workspace."},
    "old": {"type": "string", "description": "Exact text to replace, including whitespace and indentation."},
    "new": {"type": "string", "description": "Replacement text (may be empty to delete)."},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of exactly one. Default false."}
  },
  "required": ["path", "old", "new"],
  "additionalProperties": false
}`)}
}

type editArgs struct {
	Path       string  `json:"path"`
	Old        string  `json:"old"`
	New        *string `json:"new"`
	ReplaceAll bool    `json:"replace_all"`
}

func decodeEdit(args json.RawMessage) (editArgs, *Result) {
	var a editArgs
	fail := func(format string, v ...any) (editArgs, *Result) { res := Failf(format, v...); return a, &res }
	if msg, ok := DecodeArgs("workspace_edit", args, &a); !ok {
		return fail("%s", msg)
	}
	switch {
	case a.Path == "" || a.New == nil:
		return fail("path, old and new are required")
	case a.Old == "":
		return fail("old must not be empty; use workspace_write to create a file")
	case a.Old == *a.New:
		return fail("old and new are the same; nothing to change")
	}
	return a, nil
}

// Check refuses what Run would refuse before reading the file: bad
// arguments, a path outside the workspace.
func (WorkspaceEdit) Check(env Env, args json.RawMessage) error {
	a, res := decodeEdit(args)
	if res != nil {
		return refusal(*res)
	}
	if _, ok := PersonaFile(env, a.Path); ok {
		return nil // a proposal, see Run
	}
	return checkPath(env, a.Path, false)
}

// AskWhen asks, even when autonomous, for an edit that changes what runs
// when git or a shell opens the folder (RunsWhenOpened).
func (WorkspaceEdit) AskWhen(env Env, args json.RawMessage) string {
	a, res := decodeEdit(args)
	if res != nil {
		return ""
	}
	return RunsWhenOpenedReason(env, a.Path)
}

// AllowWhen: an edit of the agent's AGENTS.md or SOUL.md only files a
// proposal for the owner, which changes nothing, so it need not ask.
func (WorkspaceEdit) AllowWhen(env Env, args json.RawMessage) bool {
	a, res := decodeEdit(args)
	if res != nil {
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

func (t WorkspaceEdit) Run(ctx context.Context, env Env, args json.RawMessage) (Result, error) {
	a, res := decodeEdit(args)
	if res != nil {
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
