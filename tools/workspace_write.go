package tools

import (
	"context"
	_ "embed"

	"errors"
	"fmt"
	"github.com/my-agent-crew/crew/events"
	"io/fs"
	"os"
)

//go:embed workspace_write.md
var workspaceWriteDescription string

// WorkspaceWrite creates or replaces a workspace file, atomically. What
// it writes is redacted with Secrets; a write to the agent's persona is
// filed with Proposer (nil: refused).
type WorkspaceWrite struct {
	Secrets  *events.Redactor
	Proposer Proposer
}

func (WorkspaceWrite) NeedsApproval() bool { return true }

func (WorkspaceWrite) Def() Def {
	return Def{Name: "workspace_write", Description: workspaceWriteDescription, Default: true}
}

type writeArgs struct {
	Path    string  `json:"path" jsonschema:"File relative to the workspace; parent directories are created."`
	Content *string `json:"content" jsonschema:"The whole new content of the file."`
}

// valid refuses a write without a path or content ("" is a content).
func (a writeArgs) valid() *Result {
	if a.Path == "" || a.Content == nil {
		res := Failf("path and content are required")
		return &res
	}
	return nil
}

// Check refuses what Run would refuse before writing: bad arguments, a
// path outside the workspace or the workspace itself.
func (WorkspaceWrite) Check(env Env, a writeArgs) error {
	if res := a.valid(); res != nil {
		return refusal(*res)
	}
	if _, ok := PersonaFile(env, a.Path); ok {
		return nil // a proposal, see Run
	}
	return checkPath(env, a.Path, true)
}

// AskWhen asks, even when autonomous, for a write that changes what runs
// when git or a shell opens the folder (RunsWhenOpened).
func (WorkspaceWrite) AskWhen(env Env, a writeArgs) string {
	if a.valid() != nil {
		return ""
	}
	return RunsWhenOpenedReason(env, a.Path)
}

// AllowWhen: a write to the agent's AGENTS.md or SOUL.md only files a
// proposal for the owner, which changes nothing, so it need not ask.
func (WorkspaceWrite) AllowWhen(env Env, a writeArgs) bool {
	if a.valid() != nil {
		return false
	}
	_, ok := PersonaFile(env, a.Path)
	return ok
}

func (t WorkspaceWrite) Run(ctx context.Context, env Env, a writeArgs) (Result, error) {
	if res := a.valid(); res != nil {
		return *res, nil
	}
	if name, ok := PersonaFile(env, a.Path); ok {
		return ProposeWrite(ctx, t.Proposer, env, "workspace_write", name, *a.Content)
	}
	pl, res, err := openPath(env, a.Path)
	if res != nil || err != nil {
		return deref(res), err
	}
	defer pl.root.Close()
	if pl.rel == "." {
		return Failf("%s", workspaceItself(a.Path)), nil
	}
	_, statErr := pl.root.Stat(pl.rel)
	if err := WriteAtomic(t.Secrets, pl.root, pl.rel, []byte(*a.Content), 0o644); err != nil {
		return Failf("cannot write %s: %s", a.Path, describeWriteErr(err)), nil
	}
	verb := "overwrote"
	if errors.Is(statErr, fs.ErrNotExist) {
		verb = "created"
	}
	return Result{Output: fmt.Sprintf("%s %s (%d bytes, %d lines)", verb, a.Path, len(*a.Content), LineCount(*a.Content))}, nil
}

// describeWriteErr words a write failure without host paths.
func describeWriteErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}
