package canvas

import (
	"context"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed artifact_export.md
var exportDescription string

// Export is artifact_export: a canvas's latest version written to a
// workspace file, whole or not at all. It asks first (it overwrites).
type Export struct{ base }

func (Export) NeedsApproval() bool { return true }

func (Export) Def() tools.Def {
	return tools.Def{Name: "artifact_export", Description: exportDescription, Default: true}
}

type exportArgs struct {
	Artifact string `json:"artifact" jsonschema:"The canvas id."`
	Path     string `json:"path" jsonschema:"File relative to the workspace; replaced if it exists."`
}

// target resolves where the export goes: inside the workspace, not the
// workspace itself, not a directory and not a symlink (it would write
// through it).
func target(env tools.Env, a exportArgs) (root, rel string, err error) {
	if a.Artifact == "" || a.Path == "" {
		return "", "", errors.New("artifact and path are required")
	}
	if root, err = filepath.EvalSymlinks(env.Workspace); err != nil {
		return "", "", fmt.Errorf("the workspace cannot be opened: %w", err)
	}
	// The name itself, before symlinks are resolved: a symlink there is
	// refused, not followed.
	clean := filepath.Clean(a.Path)
	if filepath.IsAbs(clean) {
		if r, rerr := filepath.Rel(root, clean); rerr == nil {
			clean = r
		}
	}
	if st, lerr := os.Lstat(filepath.Join(root, clean)); lerr == nil {
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			return "", "", fmt.Errorf("%s is a symlink: export writes only to a plain file", a.Path)
		case st.IsDir():
			return "", "", fmt.Errorf("%s is a directory: name a file", a.Path)
		}
	}
	abs, err := tools.Resolve(env.Workspace, a.Path)
	if err != nil {
		return "", "", errors.New(pathErr(a.Path, err))
	}
	if rel, err = filepath.Rel(root, abs); err != nil || rel == "." {
		return "", "", fmt.Errorf("path %q is the workspace itself; name a file", a.Path)
	}
	return root, rel, nil
}

// Check refuses before anyone is asked what Run would refuse: bad
// arguments, a path outside the workspace, a directory or a symlink.
func (Export) Check(env tools.Env, a exportArgs) error {
	if _, ok := persona(env, a); ok {
		return nil // a proposal, see Run
	}
	_, _, err := target(env, a)
	return err
}

// persona is the agent's AGENTS.md or SOUL.md when the export's path
// names one (R-X-7): the export is then a proposal for the owner.
func persona(env tools.Env, a exportArgs) (string, bool) {
	if a.Artifact == "" {
		return "", false
	}
	return tools.PersonaFile(env, a.Path)
}

// AskWhen asks, even when autonomous, for an export onto a path that
// changes what runs when git or a shell opens the folder.
func (Export) AskWhen(env tools.Env, a exportArgs) string {
	if a.Path == "" {
		return ""
	}
	return tools.RunsWhenOpenedReason(env, a.Path)
}

// AllowWhen: an export onto AGENTS.md or SOUL.md only files a proposal,
// which changes nothing, so it need not ask.
func (Export) AllowWhen(env tools.Env, a exportArgs) bool {
	_, ok := persona(env, a)
	return ok
}

func (e Export) Run(ctx context.Context, env tools.Env, a exportArgs) (tools.Result, error) {
	if name, ok := persona(env, a); ok {
		rec, res, err := e.get(env, a.Artifact)
		if res != nil || err != nil {
			return deref(res), err
		}
		rec, _, text, err := e.svc.Content(rec.ID, 0)
		if err != nil {
			return failed(err)
		}
		if rec.Kind == events.KindImage {
			return tools.Failf("%s is text: an image cannot be exported onto it; nothing was written", name), nil
		}
		return tools.ProposeWrite(ctx, e.s.Proposer, env, "artifact_export", name, text)
	}
	root, rel, err := target(env, a)
	if err != nil {
		return tools.Failf("%s", err.Error()), nil
	}
	rec, res, err := e.get(env, a.Artifact)
	if res != nil || err != nil {
		return deref(res), err
	}
	rec, v, text, err := e.svc.Content(rec.ID, 0)
	if err != nil {
		return failed(err)
	}
	data := []byte(text)
	if rec.Kind == events.KindImage {
		if data, err = base64.StdEncoding.DecodeString(text); err != nil {
			return tools.Result{}, fmt.Errorf("canvas %s v%d: stored image: %w", rec.ID, v.Version, err)
		}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return tools.Result{}, fmt.Errorf("open workspace: %w", err)
	}
	defer r.Close()
	if err := tools.WriteAtomic(e.s.Secrets, r, rel, data, 0o644); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return tools.Failf("Nothing was written to %s: %v", a.Path, err), nil
	}
	return tools.Result{Output: fmt.Sprintf("Wrote version %d of %s (%d bytes) to %s.", v.Version, rec.ID, len(data), filepath.ToSlash(rel)),
		Parts: []tools.Part{tools.FilePart(filepath.ToSlash(rel), ContentType(rec.Kind, rec.MIME))}}, nil
}
