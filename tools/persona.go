package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/my-agent-crew/crew/events"
)

// An agent's AGENTS.md and SOUL.md are its persona: the owner's words,
// read at every model call. No tool writes them (R-X-7): a write or edit
// a tool would make to one becomes a proposal the owner approves or
// rejects (loop/consolidate, the /memory page, POST
// /api/memory/proposals/{id}).

// Proposer files a persona change as a proposal for the owner.
type Proposer interface {
	ProposePersona(ctx context.Context, c PersonaChange) (id string, err error)
}

// PersonaChange is a write a tool would have made to a persona file.
type PersonaChange struct {
	Agent string
	File  string // events.PersonaAgents or events.PersonaSoul
	// Old is the file as the tool read it ("" when missing): the approval
	// applies New only while the file is still Old.
	Old, New string
	// The call that proposed it (provenance, R-X-7).
	Tool, RunID, CallID, Conversation, Untrusted string
}

// PersonaFile reports which persona file of env's agent rel names, if
// any: however it is spelled — relative to the workspace, absolute, with
// "..", through symlinks (resolved), in any letter case — once it lands in
// the agent's folder as AGENTS.md or SOUL.md.
func PersonaFile(env Env, rel string) (string, bool) {
	if env.AgentDir == "" || rel == "" {
		return "", false
	}
	root, err := workspaceRoot(env.Workspace)
	if err != nil {
		return "", false
	}
	agentDir, err := filepath.EvalSymlinks(env.AgentDir)
	if err != nil {
		return "", false
	}
	p := rel
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	p = filepath.Clean(p)
	// Both the path as written and where its symlinks lead count.
	cands := []string{p}
	if abs, err := resolveExisting(p); err == nil {
		cands = append(cands, abs)
	} else if target, lerr := os.Readlink(p); lerr == nil {
		// A dangling link: where it would write.
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		cands = append(cands, filepath.Clean(target))
	}
	for _, c := range cands {
		dir, err := resolveExisting(filepath.Dir(c))
		if err != nil || dir != agentDir {
			continue
		}
		for _, name := range []string{events.PersonaAgents, events.PersonaSoul} {
			if strings.EqualFold(filepath.Base(c), name) {
				return name, true
			}
		}
	}
	return "", false
}

// readPersona returns the persona file's text, "" when it does not exist.
func readPersona(env Env, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(env.AgentDir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	return string(b), nil
}

// proposePersona files old → new of env's agent's persona file name as a
// proposal and tells the model so; nothing is written.
func proposePersona(ctx context.Context, p Proposer, env Env, tool, name, old, new string) (Result, error) {
	if p == nil {
		return Failf("%s is the owner's file: changes to it are proposals for the owner, and this crew has no way to file one here; nothing was written", name), nil
	}
	if old == new {
		return Result{Output: fmt.Sprintf("%s already reads exactly that; nothing to propose, nothing was written.", name)}, nil
	}
	id, err := p.ProposePersona(ctx, PersonaChange{Agent: env.AgentID, File: name, Old: old, New: new,
		Tool: tool, RunID: env.RunID, CallID: env.CallID, Conversation: env.Conversation, Untrusted: env.Untrusted})
	if err != nil {
		return Result{}, fmt.Errorf("propose %s: %w", name, err)
	}
	return Result{
		Output: fmt.Sprintf("%s was not changed: it is the owner's file, so your change is proposal %s, awaiting the owner's approval on the memory page. "+
			"It is applied only if they approve it and %s has not changed since; until then %s stays as it was.", name, id, name, name),
		Meta: map[string]any{"proposal": map[string]any{"id": id, "file": name, "agent": env.AgentID}},
	}, nil
}

// ProposeWrite is a tool's write of content to env's agent's persona file
// name (from PersonaFile) as a proposal filed with p (nil: refused): the
// file as it is now against content. Nothing is written; the result tells
// the model it awaits the owner.
func ProposeWrite(ctx context.Context, p Proposer, env Env, tool, name, content string) (Result, error) {
	old, err := readPersona(env, name)
	if err != nil {
		return Result{}, err
	}
	return proposePersona(ctx, p, env, tool, name, old, content)
}
