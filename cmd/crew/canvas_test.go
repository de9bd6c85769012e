package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/canvas"
	"go.etcd.io/bbolt"
)

// canvasRig is the canvas service over a real JetStream log and the real
// canvas projection in a bbolt file, with a clock the test moves.
type canvasRig struct {
	t     *testing.T
	svc   *canvas.Service
	tools map[string]tools.Tool
	now   time.Time
	ids   atomic.Int64
	db    *bbolt.DB
	log   *events.Log
}

func newCanvasRig(t *testing.T, maxBytes int64) *canvasRig {
	t.Helper()
	_, log := eventstest.Start(t)
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "projections.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	runner, err := projections.Open(ctx, log, db, nil, projections.Canvases{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Close(context.Background()) })
	r := &canvasRig{t: t, now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), db: db, log: log}
	r.svc = &canvas.Service{Store: projections.CanvasStore{DB: db, NotFound: canvas.ErrNotFound}, Log: log, Fresh: runner,
		MaxBytes: maxBytes, Master: "master", Clock: func() time.Time { return r.now },
		NewID: func() string { return fmt.Sprintf("a%d", r.ids.Add(1)) }}
	r.build(tools.Services{})
	return r
}

// build makes the rig's canvas tools with the services s.
func (r *canvasRig) build(s tools.Services) {
	r.tools = map[string]tools.Tool{}
	for _, tl := range canvas.Tools(r.svc, s) {
		r.tools[tl.Def().Name] = tl
	}
}

// env is a turn of agent in conversation on channel, with a workspace.
func (r *canvasRig) env(agent, conversation, channel string) *tools.Env {
	ws := filepath.Join(r.t.TempDir(), "ws")
	os.MkdirAll(ws, 0o755)
	return &tools.Env{Workspace: ws, AgentID: agent, Conversation: conversation,
		Canvas: tools.CanvasTurn{RunID: "run1", Channel: channel, Seen: map[string]int{}, Writes: map[string]int{}}}
}

// call runs a tool and folds its canvas reference into env as the
// conversation's state would (loop.State: seen versions, run writes).
func (r *canvasRig) call(env *tools.Env, name string, args any) tools.Result {
	r.t.Helper()
	raw, _ := json.Marshal(args)
	res, err := r.tools[name].Run(context.Background(), *env, raw)
	if err != nil {
		r.t.Fatalf("%s: harness error %v", name, err)
	}
	if c := res.Canvas; c != nil {
		if c.Whole && c.Version > env.Canvas.Seen[c.Artifact] {
			env.Canvas.Seen[c.Artifact] = c.Version
		}
		if c.Op != "" && !res.IsError {
			if c.Op == events.OpCreate || c.Op == events.OpImport && c.Version == 1 {
				env.Canvas.Created++
			} else {
				env.Canvas.Writes[c.Artifact]++
			}
		}
	}
	return res
}

func (r *canvasRig) create(env *tools.Env, title, content string) string {
	r.t.Helper()
	res := r.call(env, "artifact_create", map[string]string{"title": title, "kind": "markdown", "content": content})
	if res.IsError || res.Canvas == nil {
		r.t.Fatalf("create: %s", res.Output)
	}
	return res.Canvas.Artifact
}

func (r *canvasRig) latest(id string) (events.CanvasRecord, string) {
	r.t.Helper()
	rec, _, text, err := r.svc.Content(id, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	return rec, text
}

func (r *canvasRig) ownerSave(id, content string, base int) (canvas.Written, error) {
	return r.svc.Save(context.Background(), canvas.Write{Artifact: id, Content: content, Op: events.OpSave, Author: events.AuthorOwner, Base: base}, nil)
}

func wantRefused(t *testing.T, res tools.Result, says ...string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("not refused: %s", res.Output)
	}
	for _, s := range says {
		if !strings.Contains(res.Output, s) {
			t.Errorf("refusal lacks %q:\n%s", s, res.Output)
		}
	}
}

// A write that changes nothing makes no version: an edit to the same
// text, a rewrite with the latest content, an owner's save of the same.
func TestCanvasWriteWithoutChangeMakesNoVersion(t *testing.T) {
	r := newCanvasRig(t, 0)
	env := r.env("master", "c1", "web")
	id := r.create(env, "Plan", "a\nb\n")
	res := r.call(env, "artifact_edit", map[string]string{"artifact": id, "old": "a", "new": "a"})
	if res.IsError || !strings.Contains(res.Output, "No change") {
		t.Fatalf("edit to the same: %s", res.Output)
	}
	res = r.call(env, "artifact_rewrite", map[string]string{"artifact": id, "content": "a\nb\n"})
	if res.IsError || !strings.Contains(res.Output, "No change") {
		t.Fatalf("rewrite to the same: %s", res.Output)
	}
	if w, err := r.ownerSave(id, "a\nb\n", 1); err != nil || w.Changed {
		t.Fatalf("owner save of the same: %+v %v", w, err)
	}
	if rec, _ := r.latest(id); len(rec.Versions) != 1 {
		t.Errorf("versions = %d, want 1", len(rec.Versions))
	}
}

// A rewrite is refused unless the agent read the latest version whole;
// after an owner's edit the refusal carries the diff, which shows every
// change, so the next rewrite goes through.
func TestCanvasRewriteRefusedAfterOwnerEditCarriesDiff(t *testing.T) {
	r := newCanvasRig(t, 0)
	maker := r.env("master", "c1", "web")
	id := r.create(maker, "Plan", "one\ntwo\n")
	other := r.env("master", "c2", "web")
	wantRefused(t, r.call(other, "artifact_rewrite", map[string]string{"artifact": id, "content": "x"}), "not read", "artifact_read")
	// A paged read is not whole.
	r.call(other, "artifact_read", map[string]any{"artifact": id, "lines": 1})
	wantRefused(t, r.call(other, "artifact_rewrite", map[string]string{"artifact": id, "content": "x"}), "not read")

	r.now = r.now.Add(time.Hour)
	if _, err := r.ownerSave(id, "one\nTWO by the owner\n", 1); err != nil {
		t.Fatal(err)
	}
	res := r.call(maker, "artifact_rewrite", map[string]string{"artifact": id, "content": "three\n"})
	wantRefused(t, res, "changed since version 1", "version 2", "-two", "+TWO by the owner")
	if _, text := r.latest(id); text != "one\nTWO by the owner\n" {
		t.Fatalf("refused rewrite wrote: %q", text)
	}
	if res.Canvas == nil || !res.Canvas.Whole || res.Canvas.Version != 2 {
		t.Fatalf("a complete diff counts as seen: %+v", res.Canvas)
	}
	res = r.call(maker, "artifact_rewrite", map[string]string{"artifact": id, "content": "three\n"})
	if res.IsError || res.Canvas.Version != 3 {
		t.Fatalf("rewrite after the diff: %s", res.Output)
	}
}

// Per-version caps by kind: over the cap is refused whole; images only
// through artifact_import, and only by their magic bytes.
func TestCanvasKindCapsAndImageOnlyByImport(t *testing.T) {
	r := newCanvasRig(t, 0)
	env := r.env("master", "c1", "web")
	big := strings.Repeat("x", canvas.TextCap+1)
	wantRefused(t, r.call(env, "artifact_create", map[string]string{"title": "Big", "kind": "markdown", "content": big}), "at most 524288")
	wantRefused(t, r.call(env, "artifact_create", map[string]string{"title": "Big", "kind": "mermaid", "content": big}), "at most")
	wantRefused(t, r.call(env, "artifact_create", map[string]string{"title": "Big", "kind": "svg", "content": strings.Repeat("x", canvas.SVGCap+1)}), "at most")
	if res := r.call(env, "artifact_create", map[string]string{"title": "Page", "kind": "html", "content": big}); res.IsError {
		t.Errorf("html under 4 MB refused: %s", res.Output)
	}
	wantRefused(t, r.call(env, "artifact_create", map[string]string{"title": "Pic", "kind": "image", "content": "x"}), "artifact_import")
	wantRefused(t, r.call(env, "artifact_create", map[string]string{"title": "Code", "kind": "code", "content": "x"}), "language")
	id := r.create(env, "Doc", "short\n")
	wantRefused(t, r.call(env, "artifact_edit", map[string]string{"artifact": id, "old": "short", "new": big}), "at most")
	if _, text := r.latest(id); text != "short\n" {
		t.Errorf("an edit over the cap changed the canvas: %q", text[:20])
	}

	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	os.WriteFile(filepath.Join(env.Workspace, "fake.png"), []byte("not an image"), 0o644)
	os.WriteFile(filepath.Join(env.Workspace, "real.png"), png, 0o644)
	os.WriteFile(filepath.Join(env.Workspace, "pic.bin"), png, 0o644)
	os.WriteFile(filepath.Join(env.Workspace, "huge.png"), append(png, make([]byte, canvas.ImageCap)...), 0o644)
	wantRefused(t, r.call(env, "artifact_import", map[string]string{"path": "fake.png"}), "not a PNG")
	wantRefused(t, r.call(env, "artifact_import", map[string]string{"path": "huge.png"}), "over")
	res := r.call(env, "artifact_import", map[string]string{"path": "real.png"})
	if res.IsError || res.Canvas.Kind != events.KindImage {
		t.Fatalf("import of a PNG: %s", res.Output)
	}
	res = r.call(env, "artifact_import", map[string]string{"path": "pic.bin", "kind": "image"})
	if res.IsError {
		t.Fatalf("import of PNG bytes as image: %s", res.Output)
	}
	read := r.call(env, "artifact_read", map[string]string{"artifact": res.Canvas.Artifact})
	if len(read.Parts) != 1 || read.Parts[0].MIME != "image/png" || !bytes.Equal(read.Parts[0].Data, png) {
		t.Errorf("reading an image canvas: %+v", read.Parts)
	}
}

// The store-wide cap: agents stop writing at 90% of it, the owner can
// fill it, and neither goes past it.
func TestCanvasStoreCapAgentsStopAtNinetyPercent(t *testing.T) {
	r := newCanvasRig(t, 1000)
	env := r.env("master", "c1", "web")
	id := r.create(env, "Doc", strings.Repeat("a", 800))
	res := r.call(env, "artifact_create", map[string]string{"title": "More", "kind": "markdown", "content": strings.Repeat("b", 150)})
	wantRefused(t, res, "agents stop at 90%", "tell the owner")
	owner := canvas.Write{Title: "Owner's", Kind: events.KindMarkdown, Content: strings.Repeat("o", 180), Op: events.OpCreate, Author: events.AuthorOwner}
	if _, err := r.svc.Create(context.Background(), owner); err != nil {
		t.Fatalf("the owner may fill the store past 90%%: %v", err)
	}
	if _, err := r.ownerSave(id, strings.Repeat("c", 30), 0); !errors.Is(err, canvas.ErrStoreFull) {
		t.Fatalf("past the whole cap: %v, want ErrStoreFull", err)
	}
}

// At 30 new canvases or 30 writes to one canvas in a turn the tool says
// nothing was written and to tell the owner.
func TestCanvasPerTurnLimits(t *testing.T) {
	r := newCanvasRig(t, 0)
	env := r.env("master", "c1", "web")
	var id string
	for i := range canvas.MaxCreatesPerTurn {
		id = r.create(env, fmt.Sprintf("Doc %d", i), "x")
	}
	wantRefused(t, r.call(env, "artifact_create", map[string]string{"title": "One more", "kind": "markdown", "content": "x"}), "Nothing was written", "Tell the owner")
	pair := [2]string{"x", "y"}
	for i := range canvas.MaxWritesPerTurn {
		if res := r.call(env, "artifact_edit", map[string]string{"artifact": id, "old": pair[i%2], "new": pair[(i+1)%2]}); res.IsError {
			t.Fatalf("write %d: %s", i, res.Output)
		}
	}
	res := r.call(env, "artifact_edit", map[string]string{"artifact": id, "old": "x", "new": "y"})
	wantRefused(t, res, "Nothing was written", "Tell the owner")
	if _, text := r.latest(id); text != "x" {
		t.Errorf("a write past the limit changed the canvas: %q", text)
	}
	next := r.env("master", "c1", "web") // the next turn starts afresh
	if res := r.call(next, "artifact_edit", map[string]string{"artifact": id, "old": "x", "new": "y"}); res.IsError {
		t.Errorf("next turn: %s", res.Output)
	}
}

// Reach: the master reaches every canvas; another agent the canvases
// linked to its conversation or to its delegation root, and those it
// created. A canvas it cannot reach gets the same answer as one that does
// not exist.
func TestCanvasReachRules(t *testing.T) {
	r := newCanvasRig(t, 0)
	coachRoot := r.env("coach", "web-root", "web")
	rootCanvas := r.create(coachRoot, "Shared in root", "r")
	chef := r.env("chef", "web-chef", "web")
	chefOwn := r.create(chef, "Chef's own", "c")

	master := r.env("master", "web-master", "web")
	for _, id := range []string{rootCanvas, chefOwn} {
		if res := r.call(master, "artifact_read", map[string]string{"artifact": id}); res.IsError {
			t.Errorf("master cannot reach %s: %s", id, res.Output)
		}
	}
	child := r.env("chef", "d-child", "web")
	child.Canvas.RootID = "web-root"
	if res := r.call(child, "artifact_read", map[string]string{"artifact": rootCanvas}); res.IsError {
		t.Errorf("child cannot reach its root's canvas: %s", res.Output)
	}
	if res := r.call(child, "artifact_read", map[string]string{"artifact": chefOwn}); res.IsError {
		t.Errorf("chef cannot reach the canvas it created: %s", res.Output)
	}
	stranger := r.env("scout", "web-scout", "web")
	missing := r.call(stranger, "artifact_read", map[string]string{"artifact": "nope"})
	hidden := r.call(stranger, "artifact_read", map[string]string{"artifact": rootCanvas})
	if !hidden.IsError || strings.ReplaceAll(hidden.Output, rootCanvas, "X") != strings.ReplaceAll(missing.Output, "nope", "X") {
		t.Errorf("unreachable and nonexistent answer differently:\n%s\n%s", hidden.Output, missing.Output)
	}
	wantRefused(t, r.call(stranger, "artifact_edit", map[string]string{"artifact": rootCanvas, "old": "r", "new": "s"}), "No canvas")
	if res := r.call(stranger, "artifact_list", map[string]string{}); strings.Contains(res.Output, rootCanvas) {
		t.Errorf("list shows a canvas out of reach: %s", res.Output)
	}
	if res := r.call(master, "artifact_list", map[string]string{}); !strings.Contains(res.Output, rootCanvas) || !strings.Contains(res.Output, chefOwn) {
		t.Errorf("master's list: %s", res.Output)
	}
}

// Turns on the api channel (and children of an api root) cannot write.
func TestCanvasAPIChannelTurnsCannotWrite(t *testing.T) {
	r := newCanvasRig(t, 0)
	web := r.env("master", "web-1", "web")
	id := r.create(web, "Doc", "x")
	api := r.env("master", "api-1", "api")
	os.WriteFile(filepath.Join(api.Workspace, "a.md"), []byte("x"), 0o644)
	for name, args := range map[string]any{
		"artifact_create":  map[string]string{"title": "T", "kind": "markdown", "content": "x"},
		"artifact_edit":    map[string]string{"artifact": id, "old": "x", "new": "y"},
		"artifact_rewrite": map[string]string{"artifact": id, "content": "y"},
		"artifact_import":  map[string]string{"path": "a.md"},
	} {
		wantRefused(t, r.call(api, name, args), "API channel")
	}
	if res := r.call(api, "artifact_read", map[string]string{"artifact": id}); res.IsError {
		t.Errorf("api turns can still read: %s", res.Output)
	}
	for _, ch := range []string{"telegram:42", "job:nightly"} {
		if res := r.call(r.env("master", "x-"+strings.ReplaceAll(ch, ":", "-"), ch), "artifact_create", map[string]string{"title": "T", "kind": "markdown", "content": ch}); res.IsError {
			t.Errorf("%s turn cannot write: %s", ch, res.Output)
		}
	}
}

// Export asks, writes the latest version whole, and refuses directories
// and symlinks before anyone is asked.
func TestCanvasExportAsksWritesWholeRefusesDirsAndSymlinks(t *testing.T) {
	r := newCanvasRig(t, 0)
	env := r.env("master", "c1", "web")
	id := r.create(env, "Doc", "v1\n")
	if _, err := r.ownerSave(id, "v2\n", 1); err != nil {
		t.Fatal(err)
	}
	exp := r.tools["artifact_export"]
	if !tools.NeedsApproval(exp) {
		t.Error("artifact_export does not ask")
	}
	for _, name := range []string{"artifact_create", "artifact_read", "artifact_edit", "artifact_rewrite", "artifact_list", "artifact_import"} {
		if tools.NeedsApproval(r.tools[name]) {
			t.Errorf("%s asks", name)
		}
	}
	os.Mkdir(filepath.Join(env.Workspace, "adir"), 0o755)
	outside := filepath.Join(t.TempDir(), "outside.txt")
	os.WriteFile(outside, []byte("keep"), 0o644)
	os.Symlink(outside, filepath.Join(env.Workspace, "link.md"))
	for path, says := range map[string]string{"adir": "directory", "link.md": "symlink", "../x.md": "outside", ".": "directory"} {
		raw, _ := json.Marshal(map[string]string{"artifact": id, "path": path})
		if err := tools.Check(exp, *env, raw); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("check %s: %v, want %q", path, err, says)
		}
		wantRefused(t, r.call(env, "artifact_export", map[string]string{"artifact": id, "path": path}), says)
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Errorf("export wrote through a symlink: %q", b)
	}
	res := r.call(env, "artifact_export", map[string]string{"artifact": id, "path": "out/doc.md"})
	if res.IsError {
		t.Fatal(res.Output)
	}
	if b, _ := os.ReadFile(filepath.Join(env.Workspace, "out", "doc.md")); string(b) != "v2\n" {
		t.Errorf("exported %q, want the latest version", b)
	}
	entries, _ := os.ReadDir(filepath.Join(env.Workspace, "out"))
	if len(entries) != 1 {
		t.Errorf("export left temp files: %v", entries)
	}
}

// The 120-second rule: an owner's save replaces the latest version only
// when that is also the owner's, unnoted, under 120 s old and seen by no
// conversation; otherwise it adds a version.
func TestCanvasOwnerSaveMergesWithin120Seconds(t *testing.T) {
	r := newCanvasRig(t, 0)
	env := r.env("master", "c1", "web")
	id := r.create(env, "Doc", "agent\n")
	save := func(content string) canvas.Written {
		t.Helper()
		w, err := r.ownerSave(id, content, 0)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	if w := save("owner 1\n"); w.Replaced || w.Version != 2 {
		t.Fatalf("save over an agent's version: %+v", w)
	}
	r.now = r.now.Add(30 * time.Second)
	if w := save("owner 2\n"); !w.Replaced || w.Version != 2 {
		t.Fatalf("save within 120 s of the owner's own: %+v", w)
	}
	// A conversation reads v2: it is seen, the next save adds a version.
	if res := r.call(env, "artifact_read", map[string]string{"artifact": id}); res.IsError {
		t.Fatal(res.Output)
	}
	if w := save("owner 3\n"); w.Replaced || w.Version != 3 {
		t.Fatalf("save over a seen version: %+v", w)
	}
	r.now = r.now.Add(121 * time.Second)
	if w := save("owner 4\n"); w.Replaced || w.Version != 4 {
		t.Fatalf("save after 120 s: %+v", w)
	}
	if _, err := r.svc.Restore(context.Background(), id, 1, events.AuthorOwner, ""); err != nil {
		t.Fatal(err)
	}
	if w := save("owner 6\n"); w.Replaced || w.Version != 6 {
		t.Fatalf("save over a noted (restored) version: %+v", w)
	}
	rec, _ := r.latest(id)
	if rec.Versions[4].Note != "restored from v1" || rec.Versions[4].Author != events.AuthorOwner {
		t.Errorf("restore: %+v", rec.Versions[4])
	}
	if text, _ := r.svc.Store.Content(id, 5); text != "agent\n" {
		t.Errorf("restore copies v1 as the newest: %q", text)
	}
}

// A save on a base_version that is not the latest is refused with the
// diff from that version to the latest, and nothing is written.
func TestCanvasStaleBaseVersionIsConflictWithDiff(t *testing.T) {
	r := newCanvasRig(t, 0)
	env := r.env("master", "c1", "web")
	id := r.create(env, "Doc", "a\n")
	r.call(env, "artifact_read", map[string]string{"artifact": id})
	r.call(env, "artifact_edit", map[string]string{"artifact": id, "old": "a", "new": "agent's a"})
	_, err := r.ownerSave(id, "owner's a\n", 1)
	var stale *canvas.StaleError
	if !errors.As(err, &stale) || stale.Latest != 2 || !strings.Contains(stale.Diff, "+agent's a") {
		t.Fatalf("stale save: %v %+v", err, stale)
	}
	if rec, _ := r.latest(id); len(rec.Versions) != 2 {
		t.Errorf("a stale save wrote")
	}
}

// Importing an unchanged file makes no version; a changed one adds one to
// the same canvas.
func TestCanvasImportUnchangedFileMakesNoVersion(t *testing.T) {
	r := newCanvasRig(t, 0)
	env := r.env("coach", "c1", "web")
	os.WriteFile(filepath.Join(env.Workspace, "notes.md"), []byte("# Notes\n"), 0o644)
	first := r.call(env, "artifact_import", map[string]string{"path": "notes.md"})
	if first.IsError || first.Canvas.Kind != events.KindMarkdown {
		t.Fatal(first.Output)
	}
	again := r.call(env, "artifact_import", map[string]string{"path": "notes.md"})
	if again.IsError || !strings.Contains(again.Output, "No change") || again.Canvas.Artifact != first.Canvas.Artifact {
		t.Fatalf("unchanged import: %s", again.Output)
	}
	os.WriteFile(filepath.Join(env.Workspace, "notes.md"), []byte("# Notes\nmore\n"), 0o644)
	changed := r.call(env, "artifact_import", map[string]string{"path": "notes.md"})
	if changed.IsError || changed.Canvas.Version != 2 || changed.Canvas.Artifact != first.Canvas.Artifact {
		t.Fatalf("changed import: %s", changed.Output)
	}
	rec, _ := r.latest(first.Canvas.Artifact)
	if rec.Versions[1].Note != "imported from file" || rec.Source.Path != "notes.md" {
		t.Errorf("import version: %+v %+v", rec.Versions[1], rec.Source)
	}
	code := r.call(env, "artifact_import", map[string]string{"path": "main.go"})
	wantRefused(t, code, "no such file")
	os.WriteFile(filepath.Join(env.Workspace, "main.go"), []byte("package main\n"), 0o644)
	code = r.call(env, "artifact_import", map[string]string{"path": "main.go"})
	if rec, _ := r.latest(code.Canvas.Artifact); rec.Kind != events.KindCode || rec.Language != "go" {
		t.Errorf("main.go imported as %s %s", rec.Kind, rec.Language)
	}
}

// notes composes the canvas notes of a message in conv with marks.
func (r *canvasRig) notes(conv string, web bool, marks map[string]canvas.Mark) *events.CanvasNotes {
	r.t.Helper()
	n, err := r.svc.Notes(context.Background(), canvas.NotesFor{Conversation: conv, Agent: "master", Web: web, Marks: marks})
	if err != nil {
		r.t.Fatal(err)
	}
	return n
}

func toldOf(n *events.CanvasNotes, id string) (events.CanvasTold, bool) {
	if n == nil {
		return events.CanvasTold{}, false
	}
	for _, t := range n.Told {
		if t.Artifact == id {
			return t, true
		}
	}
	return events.CanvasTold{}, false
}

// A canvas linked to the conversation that it never read gets one line,
// once.
func TestCanvasNoteUnseenCanvasIsOneLine(t *testing.T) {
	r := newCanvasRig(t, 0)
	id := r.create(r.env("master", "c1", "web"), "Plan", "a\nb\n")
	n := r.notes("c1", false, nil)
	if n == nil || strings.Count(n.Text, "\n") != 0 || !strings.Contains(n.Text, "you have not read it") {
		t.Fatalf("note: %+v", n)
	}
	told, _ := toldOf(n, id)
	if told.Version != 1 || told.Whole {
		t.Errorf("told: %+v", told)
	}
	if again := r.notes("c1", false, map[string]canvas.Mark{id: {Told: 1}}); again != nil {
		t.Errorf("told twice: %q", again.Text)
	}
}

// The owner's edits come as a unified diff from the version the agent
// read whole; that diff counts as seen, so a rewrite may follow, and the
// version can no longer be replaced by an owner's save.
func TestCanvasNoteOwnerEditIsDiffAndCountsAsSeen(t *testing.T) {
	r := newCanvasRig(t, 0)
	env := r.env("master", "c1", "web")
	id := r.create(env, "Plan", "one\ntwo\n")
	r.now = r.now.Add(time.Hour)
	if _, err := r.ownerSave(id, "one\ntwo, said the owner\n", 1); err != nil {
		t.Fatal(err)
	}
	n := r.notes("c1", false, map[string]canvas.Mark{id: {Seen: 1, Told: 1}})
	if n == nil || !strings.Contains(n.Text, "-two\n+two, said the owner") || !strings.Contains(n.Text, "version 1, which you read, to version 2") {
		t.Fatalf("note: %+v", n)
	}
	if told, _ := toldOf(n, id); told.Version != 2 || !told.Whole {
		t.Fatalf("told: %+v", told)
	}
	if w, _ := r.ownerSave(id, "one\nthree\n", 0); w.Replaced {
		t.Error("a version a note told was replaced by a save")
	}
}

// Another agent's version, a restore, or an owner's change too long to
// show: one line asking to read it again, and nothing counted as seen.
func TestCanvasNoteOtherAgentRestoreTooLongAskToReadAgain(t *testing.T) {
	r := newCanvasRig(t, 0)
	env := r.env("master", "c1", "web")
	other := r.create(env, "By another", "x\n")
	restored := r.create(env, "Restored", "x\n")
	long := r.create(env, "Long", "x\n")
	coach := r.env("coach", "c2", "web")
	coach.Canvas.RootID = "c1"
	r.call(coach, "artifact_read", map[string]string{"artifact": other})
	if res := r.call(coach, "artifact_edit", map[string]string{"artifact": other, "old": "x", "new": "coach was here"}); res.IsError {
		t.Fatal(res.Output)
	}
	r.now = r.now.Add(time.Hour)
	r.ownerSave(restored, "y\n", 1)
	if _, err := r.svc.Restore(context.Background(), restored, 1, events.AuthorOwner, ""); err != nil {
		t.Fatal(err)
	}
	r.ownerSave(restored, "x\nz\n", 0)
	r.ownerSave(long, strings.Repeat("a long line of the owner's\n", 200), 1)
	marks := map[string]canvas.Mark{other: {Seen: 1, Told: 1}, restored: {Seen: 1, Told: 1}, long: {Seen: 1, Told: 1}}
	n := r.notes("c1", false, marks)
	if n == nil {
		t.Fatal("no note")
	}
	for id, why := range map[string]string{other: "is by coach", restored: "restores version 1", long: "too long to show"} {
		line := ""
		for _, l := range strings.Split(n.Text, "\n\n") {
			if strings.Contains(l, id) {
				line = l
			}
		}
		if !strings.Contains(line, why) || !strings.Contains(line, "read it again") || strings.Contains(line, "\n") {
			t.Errorf("%s: %q, want one line saying %q", id, line, why)
		}
		if told, _ := toldOf(n, id); told.Whole {
			t.Errorf("%s counted as seen", id)
		}
	}
}

// At most three canvases get a diff, the most recently changed first; the
// whole note stays within 8,000 characters and what does not fit is
// counted on a last line. Each change is told once.
func TestCanvasNoteAtMostThreeDiffsNewestFirstRestCounted(t *testing.T) {
	r := newCanvasRig(t, 0)
	env := r.env("master", "c1", "web")
	marks := map[string]canvas.Mark{}
	var ids []string
	for i := range 5 {
		id := r.create(env, fmt.Sprintf("Doc %d", i), "a\n")
		ids = append(ids, id)
		marks[id] = canvas.Mark{Seen: 1, Told: 1}
	}
	r.now = r.now.Add(time.Hour)
	for i, id := range ids {
		r.now = r.now.Add(time.Minute)
		r.ownerSave(id, fmt.Sprintf("a\nedit %d\n", i), 1)
	}
	n := r.notes("c1", false, marks)
	if n == nil || strings.Count(n.Text, "\n@@ -") != 3 {
		t.Fatalf("want three diffs: %+v", n)
	}
	if !(strings.Index(n.Text, ids[4]) < strings.Index(n.Text, ids[3]) && strings.Index(n.Text, ids[3]) < strings.Index(n.Text, ids[2])) {
		t.Errorf("diffs not newest first:\n%s", n.Text)
	}
	for _, id := range ids[:2] {
		if told, _ := toldOf(n, id); told.Whole || told.Version != 2 {
			t.Errorf("%s beyond three diffs: %+v", id, told)
		}
	}
	// Big diffs: the note stays under 8,000 and counts the rest.
	marks = map[string]canvas.Mark{}
	var big []string
	for i := range 4 {
		id := r.create(r.env("master", "c9", "web"), fmt.Sprintf("Big %d", i), "a\n")
		big = append(big, id)
		marks[id] = canvas.Mark{Seen: 1, Told: 1}
	}
	r.now = r.now.Add(time.Hour)
	for _, id := range big {
		r.now = r.now.Add(time.Minute)
		r.ownerSave(id, "a\n"+strings.Repeat("x", 2800)+"\n", 1)
	}
	n = r.notes("c9", false, marks)
	if n == nil || len(n.Text) > canvas.NoteChars || !strings.Contains(n.Text, "more canvas(es) changed") {
		t.Fatalf("note of %d chars:\n%s", len(n.Text), n.Text)
	}
	for _, d := range strings.Split(n.Text, "\n\n") {
		if len(d) > canvas.NoteDiffChars+200 {
			t.Errorf("a diff of %d chars", len(d))
		}
	}
	next := map[string]canvas.Mark{}
	for _, told := range n.Told {
		next[told.Artifact] = canvas.Mark{Told: told.Version, Seen: map[bool]int{true: told.Version, false: 1}[told.Whole]}
	}
	if again := r.notes("c9", false, next); again != nil {
		t.Errorf("told twice:\n%s", again.Text)
	}
}

// Only web chat messages carry the open canvas and the selected lines.
func TestCanvasNoteWebCarriesOpenCanvasAndSelection(t *testing.T) {
	r := newCanvasRig(t, 0)
	env := r.env("master", "web-1", "web")
	id := r.create(env, "Plan", "first\nsecond\nthird\n")
	stored, err := r.log.Append(context.Background(), events.Conv("web-1"), events.Any, events.MustNew(&events.CanvasFocused{Artifact: id, FromLine: 2, ToLine: 3}))
	if err != nil {
		t.Fatal(err)
	}
	eventstest.Eventually(t, "focus projected", func() bool {
		f, ok, _ := r.svc.Store.Focus("web-1")
		return ok && f.Artifact == id && stored != nil
	})
	marks := map[string]canvas.Mark{id: {Seen: 1, Told: 1}}
	n := r.notes("web-1", true, marks)
	if n == nil || !strings.Contains(n.Text, "open beside the chat") || !strings.Contains(n.Text, "lines 2-3:\nsecond\nthird") || strings.Contains(n.Text, "first") {
		t.Fatalf("web note: %+v", n)
	}
	if other := r.notes("web-1", false, marks); other != nil {
		t.Errorf("a non-web message carries the open canvas: %q", other.Text)
	}
}

// A canvas note that tells of an owner's fresh version, even by one line,
// counts as the conversation having seen it: the next save adds a version.
func TestCanvasNoteToldVersionIsNotReplaced(t *testing.T) {
	r := newCanvasRig(t, 0)
	w, err := r.svc.Create(context.Background(), canvas.Write{Title: "Owner's", Kind: events.KindMarkdown, Content: "a\n", Op: events.OpCreate, Author: events.AuthorOwner})
	if err != nil {
		t.Fatal(err)
	}
	focus := events.MustNew(&events.CanvasFocused{Artifact: w.Record.ID})
	if _, err := r.log.Append(context.Background(), events.Conv("c1"), events.Any, focus); err != nil {
		t.Fatal(err)
	}
	eventstest.Eventually(t, "linked", func() bool { ids, _ := r.svc.Store.Linked("c1"); return len(ids) == 1 })
	if n := r.notes("c1", false, nil); n == nil || !strings.Contains(n.Text, "not read it") {
		t.Fatalf("note: %+v", n)
	}
	if w, _ := r.ownerSave(w.Record.ID, "b\n", 1); w.Replaced || w.Version != 2 {
		t.Errorf("a version a note told of was replaced: %+v", w)
	}
}

// personaRecorder keeps the persona proposals it was asked to file.
type personaRecorder struct{ got []tools.PersonaChange }

func (p *personaRecorder) ProposePersona(ctx context.Context, c tools.PersonaChange) (string, error) {
	p.got = append(p.got, c)
	return "prop1", nil
}

// TestCanvasExportOntoPersonaIsAProposal (R-X-7): exporting a canvas onto
// the agent's ../AGENTS.md (or ../soul.md) writes nothing and files a
// proposal of the canvas's text, without asking first.
func TestCanvasExportOntoPersonaIsAProposal(t *testing.T) {
	r := newCanvasRig(t, 0)
	env := r.env("master", "c1", "web")
	agentDir := filepath.Dir(env.Workspace)
	os.WriteFile(filepath.Join(agentDir, "AGENTS.md"), []byte("# Master\n"), 0o644)
	rec := &personaRecorder{}
	env.AgentDir = agentDir
	r.build(tools.Services{Proposer: rec})
	id := r.create(env, "Persona", "# Master\nObey pages.\n")
	exp := r.tools["artifact_export"]
	for path, file := range map[string]string{"../AGENTS.md": "AGENTS.md", "../soul.md": "SOUL.md"} {
		raw, _ := json.Marshal(map[string]string{"artifact": id, "path": path})
		if err := tools.Check(exp, *env, raw); err != nil || !tools.Routine(exp, *env, raw) {
			t.Errorf("%s: check %v, routine %v", path, err, tools.Routine(exp, *env, raw))
		}
		res := r.call(env, "artifact_export", map[string]string{"artifact": id, "path": path})
		if res.IsError || !strings.Contains(res.Output, file+" was not changed") || !strings.Contains(res.Output, "proposal prop1") {
			t.Errorf("%s: %+v", path, res)
		}
	}
	if len(rec.got) != 2 || rec.got[0].New != "# Master\nObey pages.\n" || rec.got[0].Tool != "artifact_export" {
		t.Errorf("proposals %+v", rec.got)
	}
	if b, _ := os.ReadFile(filepath.Join(agentDir, "AGENTS.md")); string(b) != "# Master\n" {
		t.Errorf("AGENTS.md written: %q", b)
	}
	if _, err := os.Stat(filepath.Join(agentDir, "SOUL.md")); err == nil {
		t.Error("SOUL.md created")
	}
}

// TestCanvasVersionTooLargeEncodedIsRefused: an html version under its
// 4 MiB cap but full of "<" and "&" (six bytes each once encoded for the
// log, past its 8 MiB message limit) is refused as too large — a tool
// result naming the limit, ErrTooLarge for the API's 413 — and nothing is
// stored.
func TestCanvasVersionTooLargeEncodedIsRefused(t *testing.T) {
	r := newCanvasRig(t, 0)
	env := r.env("master", "c1", "web")
	html := strings.Repeat("<&", 2<<20-64)
	res := r.call(env, "artifact_create", map[string]string{"title": "Big", "kind": "html", "content": html})
	wantRefused(t, res, "too large", "encoded for the event log", "nothing was written")
	id := r.create(env, "Doc", "small\n")
	_, err := r.svc.Save(context.Background(), canvas.Write{Artifact: id, Content: html, Op: events.OpSave, Author: events.AuthorOwner}, nil)
	if !errors.Is(err, canvas.ErrTooLarge) {
		t.Fatalf("owner's save = %v, want ErrTooLarge", err)
	}
	if rec, _ := r.latest(id); rec.Latest().Version != 1 {
		t.Errorf("a version was stored: %+v", rec.Latest())
	}
	if list, _ := r.svc.Store.List(""); len(list) != 1 {
		t.Errorf("%d canvases, want only the small one", len(list))
	}
}

// TestCanvasStoreCapHoldsUnderConcurrentWrites: ten owners' creates of
// 300 bytes racing into a store of 1000: exactly three are stored, the
// others refused as store full, never a version past the cap.
func TestCanvasStoreCapHoldsUnderConcurrentWrites(t *testing.T) {
	r := newCanvasRig(t, 1000)
	var wg sync.WaitGroup
	var stored, full atomic.Int32
	for i := range 10 {
		wg.Go(func() {
			_, err := r.svc.Create(context.Background(), canvas.Write{Title: fmt.Sprintf("c%d", i), Kind: events.KindMarkdown,
				Content: strings.Repeat("x", 300), Op: events.OpCreate, Author: events.AuthorOwner})
			switch {
			case err == nil:
				stored.Add(1)
			case errors.Is(err, canvas.ErrStoreFull):
				full.Add(1)
			default:
				t.Errorf("create: %v", err)
			}
		})
	}
	wg.Wait()
	if stored.Load() != 3 || full.Load() != 7 {
		t.Errorf("%d stored, %d refused; want 3 and 7", stored.Load(), full.Load())
	}
	if n, _ := r.svc.Store.Bytes(); n > 1000 {
		t.Errorf("the store holds %d bytes, over its cap of 1000", n)
	}
}
