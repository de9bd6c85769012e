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
	h.deps.HomeDir = t.TempDir() // spill/ under it
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
	kept, err := os.ReadFile(filepath.Join(h.deps.HomeDir, img.Path))
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

// Issue 10 item 10: a call that would be refused anyway — a path outside
// the workspace, arguments that do not decode, an unknown tool — is
// refused before anyone is asked: no approval_requested, nothing run; a
// call that can run still asks in a supervised conversation.
func TestRefusedBeforeAsked(t *testing.T) {
	outside := reply{calls: []events.ToolCallRequest{
		{ID: "w1", Name: "workspace_write", Arguments: json.RawMessage(`{"path":"../x","content":"owned"}`)},
		{ID: "w2", Name: "workspace_write", Arguments: json.RawMessage(`{"path":"a.txt","contents":"typo"}`)},
		{ID: "w3", Name: "workspace_edit", Arguments: json.RawMessage(`{"path":"../../etc/passwd","old":"root","new":"toor"}`)},
		{ID: "s1", Name: "shell_run", Arguments: json.RawMessage(`{"cmd":"ls"}`)},
		{ID: "u1", Name: "format_disk", Arguments: json.RawMessage(`{}`)},
	}}
	valid := reply{calls: []events.ToolCallRequest{{ID: "w4", Name: "workspace_write", Arguments: json.RawMessage(`{"path":"a.txt","content":"fine"}`)}}}
	h := newHarness(t, map[string][]reply{"fake:a": {outside, valid}}, builtin("workspace_write"), builtin("workspace_edit"), builtin("shell_run"))
	h.send("write outside")
	h.turn()
	evs := h.events()
	asked := eventsOf[*events.ApprovalRequested](evs)
	if len(asked) != 1 || asked[0].CallID != "w4" {
		t.Fatalf("approvals asked = %+v, want only the valid write w4", asked)
	}
	if called := eventsOf[*events.ToolCalled](evs); len(called) != 0 {
		t.Errorf("refused calls were recorded as called: %+v", called)
	}
	want := map[string]string{"w1": "outside the workspace", "w2": "invalid arguments for workspace_write", "w3": "outside the workspace",
		"s1": "invalid arguments for shell_run", "u1": "Unknown tool"}
	done := eventsOf[*events.ToolCompleted](evs)
	if len(done) != len(want) {
		t.Fatalf("results = %+v", done)
	}
	for _, d := range done {
		if !d.IsError || d.Outcome != "blocked" || !strings.Contains(d.Output, want[d.CallID]) {
			t.Errorf("result of %s = %+v, want a refusal saying %q", d.CallID, d, want[d.CallID])
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(h.agent.Workspace), "x")); err == nil {
		t.Error("the write outside the workspace happened")
	}
	if st := h.state(); st.PendingApproval() == nil || st.PendingApproval().CallID != "w4" {
		t.Errorf("pending approval = %+v", st.PendingApproval())
	}
}
