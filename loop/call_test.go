package loop_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools"
)

// shooter is a test tool whose result carries an image, a file reference
// and metadata, as a browser screenshot or a canvas card will.
type shooter struct{ counter }

var png = []byte("\x89PNG\r\n\x1a\nnot really a picture")

func (s *shooter) Run(ctx context.Context, env tools.Env, args json.RawMessage) (tools.Result, error) {
	s.runs.Add(1)
	return tools.Result{Output: "a screenshot of example.org",
		Parts: []tools.Part{tools.ImagePart("image/png", png), tools.FilePart("shots/page.html", "text/html"), tools.TextPart("caption")},
		Meta:  map[string]any{"url": "https://example.org", "width": 1280}}, nil
}

// tools.Result parts reach tool_completed as references: the image's bytes
// are kept in the spill folder, never in the log; a replay reproduces them.
func TestToolResultPartsAreKeptAsReferences(t *testing.T) {
	tool := &shooter{counter{name: "shoot"}}
	h := newHarness(t, map[string][]reply{"fake:a": {use("shoot", `{}`), say("done")}}, tool)
	h.send("look")
	h.turn()
	done := eventsOf[*events.ToolCompleted](h.events())
	if len(done) != 1 {
		t.Fatalf("results = %+v", done)
	}
	d := done[0]
	if d.Output != "a screenshot of example.org" || len(d.Parts) != 3 || d.Meta["url"] != "https://example.org" {
		t.Fatalf("result = %+v", d)
	}
	img := d.Parts[0]
	if img.Kind != tools.PartImage || img.MIME != "image/png" || img.Bytes != len(png) || !strings.HasPrefix(img.Path, "spill/c1/") || !strings.HasSuffix(img.Path, ".png") {
		t.Fatalf("image part = %+v", img)
	}
	kept, err := os.ReadFile(filepath.Join(filepath.Dir(h.deps.SpillDir), img.Path))
	if err != nil || string(kept) != string(png) {
		t.Fatalf("kept image = %q, %v", kept, err)
	}
	if f := d.Parts[1]; f.Kind != tools.PartFile || f.Path != "shots/page.html" || f.MIME != "text/html" {
		t.Errorf("file part = %+v", f)
	}
	envs, err := h.log.ReadAll(t.Context(), events.Conv(h.conv).Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range envs {
		if strings.Contains(string(env.Data), "not really a picture") {
			t.Fatalf("image bytes reached the log: %s", env.Data)
		}
	}
	runs := eventsOf[*events.RunStarted](h.events())
	rep, err := loop.Replay(t.Context(), envs, runs[0].RunID, h.agent, h.deps.Tools, time.UTC, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diverged != nil {
		t.Fatalf("replay diverged at %+v", *rep.Diverged)
	}
}
