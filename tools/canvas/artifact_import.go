package canvas

import (
	"context"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"unicode/utf8"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed artifact_import.md
var importDescription string

// Import is artifact_import: a workspace file as a canvas, or as a new
// version of one.
type Import struct{ base }

func (Import) Def() tools.Def {
	return tools.Def{Name: "artifact_import", Description: importDescription, Default: true}
}

// File is a workspace file read for a canvas: its content as stored (an
// image's base64), kind and source.
type File struct {
	Kind, Language, MIME, Content string
	Source                        *events.ArtifactSource
}

// ReadFile reads rel from workspace as a canvas of kind (default from the
// extension), refusing a file over the kind's cap, an image whose bytes
// are not PNG, JPEG, GIF or WebP, and text that is not UTF-8.
func ReadFile(workspace, agent, rel, kind, language string) (File, error) {
	abs, err := tools.Resolve(workspace, rel)
	if err != nil {
		return File{}, fmt.Errorf("%w: %s", ErrBadRequest, pathErr(rel, err))
	}
	root, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return File{}, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return File{}, err
	}
	defer r.Close()
	relPath, err := filepath.Rel(root, abs)
	if err != nil {
		return File{}, err
	}
	f, err := r.Open(relPath)
	if err != nil {
		return File{}, fmt.Errorf("%w: %s", ErrBadRequest, pathErr(rel, err))
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return File{}, fmt.Errorf("%w: %s is not a regular file", ErrBadRequest, rel)
	}
	if k, l := KindOf(rel); kind == "" {
		kind, language = k, cmpOr(language, l)
	} else if kind == events.KindCode && language == "" && k == events.KindCode {
		language = l
	}
	if kind == "" {
		return File{}, fmt.Errorf("%w: cannot tell the kind of %s from its extension; give kind", ErrBadKind, rel)
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(Cap(kind))+1))
	if err != nil {
		return File{}, err
	}
	if len(data) > Cap(kind) {
		return File{}, fmt.Errorf("%w: %s is over %d bytes, the most a %s version holds; nothing was written", ErrTooLarge, rel, Cap(kind), kind)
	}
	out := File{Kind: kind, Language: language, Source: &events.ArtifactSource{Agent: agent, Path: filepath.ToSlash(relPath), Digest: events.ContentDigest(string(data))}}
	mime := ImageMIME(data)
	switch {
	case kind == events.KindImage && mime == "":
		return File{}, fmt.Errorf("%w: %s is not a PNG, JPEG, GIF or WebP image (by its bytes)", ErrBadKind, rel)
	case kind == events.KindImage:
		out.MIME, out.Content = mime, base64.StdEncoding.EncodeToString(data)
	case !utf8.Valid(data):
		return File{}, fmt.Errorf("%w: %s is not UTF-8 text; a %s canvas holds text", ErrBadKind, rel, kind)
	default:
		out.Content = string(data)
	}
	if err := checkKind(out.Kind, out.Language); err != nil {
		return File{}, err
	}
	return out, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func pathErr(rel string, err error) string {
	switch {
	case errors.Is(err, tools.ErrOutsideWorkspace):
		return fmt.Sprintf("path %q is outside the workspace", rel)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s: no such file", rel)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s: %v", rel, pe.Err)
	}
	return fmt.Sprintf("%s: %v", rel, err)
}

type importArgs struct {
	Path     string `json:"path" jsonschema:"File relative to the workspace."`
	Artifact string `json:"artifact,omitempty" jsonschema:"A canvas to import it into as a new version; default a new canvas (or the one already imported from this file)."`
	Kind     string `json:"kind,omitempty" jsonschema:"Default: from the file's extension." schema:"enum=markdown|code|mermaid|html|svg|image"`
	Language string `json:"language,omitempty" jsonschema:"For kind code; default from the extension."`
	Title    string `json:"title,omitempty" jsonschema:"For a new canvas; default the file name."`
}

func (im Import) Run(ctx context.Context, env tools.Env, a importArgs) (tools.Result, error) {
	if a.Path == "" {
		return tools.Failf("path is required"), nil
	}
	if err := im.svc.ready(); err != nil {
		return failed(err)
	}
	if why := writable(env); why != "" {
		return tools.Failf("%s", why), nil
	}
	var into *events.CanvasRecord
	if a.Artifact != "" {
		rec, res, err := im.get(env, a.Artifact)
		if res != nil || err != nil {
			return deref(res), err
		}
		into = &rec
	} else if rec, ok, err := im.importedFrom(env, a.Path); err != nil {
		return tools.Result{}, err
	} else if ok {
		into = &rec
	}
	kind := a.Kind
	if into != nil && kind == "" {
		kind = into.Kind
	}
	f, err := ReadFile(env.Workspace, env.AgentID, a.Path, kind, a.Language)
	if err != nil {
		return failed(err)
	}
	if into == nil {
		if env.Canvas.Created >= MaxCreatesPerTurn {
			return tools.Failf("Nothing was written: this turn has already created %d canvases, the most one turn may. Tell the owner what is left to do.", MaxCreatesPerTurn), nil
		}
		w, err := im.svc.Create(ctx, Write{Title: cmpOr(a.Title, path.Base(f.Source.Path)), Kind: f.Kind, Language: f.Language, MIME: f.MIME, Content: f.Content,
			Op: events.OpCreate, Author: env.AgentID, Conversation: env.Conversation, RunID: env.Canvas.RunID, Note: "imported from file", Source: f.Source})
		if err != nil {
			return failed(err)
		}
		return tools.Result{Output: fmt.Sprintf("Imported %s as canvas %q (id %s, %s), version 1.", a.Path, w.Record.Title, w.Record.ID, kindName(w.Record)),
			Canvas: ref(w.Record, 1, events.OpImport, true)}, nil
	}
	if f.Kind != into.Kind {
		return tools.Failf("%s is a %s canvas; %s reads as %s. Import it as a new canvas instead.", into.ID, into.Kind, a.Path, f.Kind), nil
	}
	if why := writeLimit(env, into.ID); why != "" {
		return tools.Failf("%s", why), nil
	}
	w, err := im.svc.Save(ctx, Write{Artifact: into.ID, Content: f.Content, MIME: f.MIME, Op: events.OpImport, Author: env.AgentID,
		Conversation: env.Conversation, RunID: env.Canvas.RunID, Note: "imported from file", Source: f.Source}, nil)
	if err != nil {
		return failed(err)
	}
	if !w.Changed {
		return tools.Result{Output: fmt.Sprintf("No change: %s is the same as version %d of %s, so no version was made.", a.Path, w.Version, into.ID),
			Canvas: ref(w.Record, w.Version, "", env.Canvas.Seen[into.ID] == w.Version)}, nil
	}
	return tools.Result{Output: fmt.Sprintf("Imported %s into %s: now version %d.", a.Path, into.ID, w.Version), Canvas: ref(w.Record, w.Version, events.OpImport, true)}, nil
}

// importedFrom finds the canvas this agent imported from rel before and
// can still reach, so importing the same file again adds a version (or,
// unchanged, none) instead of a second canvas.
func (im Import) importedFrom(env tools.Env, rel string) (events.CanvasRecord, bool, error) {
	abs, err := tools.Resolve(env.Workspace, rel)
	if err != nil {
		return events.CanvasRecord{}, false, nil // ReadFile words it
	}
	root, err := filepath.EvalSymlinks(env.Workspace)
	if err != nil {
		return events.CanvasRecord{}, false, nil
	}
	relPath, _ := filepath.Rel(root, abs)
	all, err := im.svc.Store.List("")
	if err != nil {
		return events.CanvasRecord{}, false, err
	}
	for _, rec := range all {
		if rec.Source != nil && rec.Source.Agent == env.AgentID && rec.Source.Path == filepath.ToSlash(relPath) && im.reaches(env, rec) {
			return rec, true, nil
		}
	}
	return events.CanvasRecord{}, false, nil
}
