package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed workspace_edit.md
var workspaceEditDescription string

// WorkspaceEdit replaces exact text in a workspace file.
type WorkspaceEdit struct{}

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

func (WorkspaceEdit) Run(ctx context.Context, env Env, args json.RawMessage) (Result, error) {
	var a struct {
		Path       string  `json:"path"`
		Old        string  `json:"old"`
		New        *string `json:"new"`
		ReplaceAll bool    `json:"replace_all"`
	}
	if msg, ok := DecodeArgs("workspace_edit", args, &a); !ok {
		return Failf("%s", msg), nil
	}
	switch {
	case a.Path == "" || a.New == nil:
		return Failf("path, old and new are required"), nil
	case a.Old == "":
		return Failf("old must not be empty; use workspace_write to create a file"), nil
	case a.Old == *a.New:
		return Failf("old and new are the same; nothing to change"), nil
	}
	content, res, err := readText(env, a.Path)
	if res != nil || err != nil {
		return deref(res), err
	}
	n := strings.Count(content, a.Old)
	switch {
	case n == 0:
		return Failf("old text not found in %s; read the file again and copy the text exactly, including whitespace", a.Path), nil
	case n > 1 && !a.ReplaceAll:
		return Failf("old text occurs %d times in %s; include more surrounding text to make it unique, or set replace_all", n, a.Path), nil
	}
	updated := strings.ReplaceAll(content, a.Old, *a.New) // n == 1 or replace_all

	pl, res, err := openPath(env, a.Path)
	if res != nil || err != nil {
		return deref(res), err
	}
	defer pl.root.Close()
	if err := WriteAtomic(pl.root, pl.rel, []byte(updated), 0o644); err != nil {
		return Failf("cannot write %s: %s", a.Path, describeWriteErr(err)), nil
	}
	if n == 1 {
		return Result{Output: fmt.Sprintf("replaced 1 occurrence in %s", a.Path)}, nil
	}
	return Result{Output: fmt.Sprintf("replaced %d occurrences in %s", n, a.Path)}, nil
}
