package loop_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
)

// recordRun plays a run with a fallback, a tool, an approval and a steer,
// and returns the conversation's events and the run id.
func recordRun(t *testing.T) (*harness, []events.Envelope, string) {
	t.Helper()
	look := &counter{name: "look", out: "the file says 42"}
	write := &counter{name: "workspace_write", write: true}
	h := newHarness(t, map[string][]reply{
		"fake:a": {fail(503), fail(503), fail(503)},
		"fake:b": {use("look", `{"path":"a"}`), use("workspace_write", `{"path":"b"}`), say("wrote b with 42")},
	}, look, write)
	h.send("copy a to b")
	h.turn()
	h.append(&events.ApprovalDecided{ApprovalID: h.state().PendingApproval().ID, Decision: events.DecisionApproved})
	h.turn()
	envs, err := h.log.ReadAll(t.Context(), events.Conv(h.conv).Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	runs := eventsOf[*events.RunStarted](h.events())
	return h, envs, runs[0].RunID
}

// R-OBS-3: replay with the recorded replies and results reproduces the run
// event for event, running no tool.
func TestReplayReproducesRecordedRun(t *testing.T) {
	h, envs, run := recordRun(t)
	before := h.deps.Tools
	rep, err := loop.Replay(t.Context(), envs, run, h.agent, before, time.UTC, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diverged != nil {
		t.Fatalf("diverged at %+v", *rep.Diverged)
	}
	var outputs int
	for _, env := range envs {
		switch env.Type {
		case events.TypeMessageReceived, events.TypeApprovalDecided, events.TypeConversationOpened:
		default:
			outputs++
		}
	}
	if len(rep.Lines) != outputs {
		t.Errorf("%d lines compared, run has %d loop events", len(rep.Lines), outputs)
	}
	for _, tl := range []string{"look", "workspace_write"} {
		tool, _ := before.Lookup(tl)
		if n := tool.(*counter).runs.Load(); n != 1 {
			t.Errorf("%s ran %d times in all, want 1 (the recording, not the replay)", tl, n)
		}
	}
}

// A code or config change that alters a decision shows at its step.
func TestReplayReportsDivergenceWhenDecisionChanges(t *testing.T) {
	h, envs, run := recordRun(t)
	agent := h.agent
	agent.MaxSteps = 2 // the recorded run needed 3 model calls
	rep, err := loop.Replay(t.Context(), envs, run, agent, h.deps.Tools, time.UTC, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diverged == nil {
		t.Fatal("no divergence reported")
	}
	if rep.Diverged.Type != events.TypeToolCalled && rep.Diverged.Type != events.TypeApprovalRequested {
		t.Errorf("diverged at %+v, want the second step's tool call", *rep.Diverged)
	}
}

// Changed model replies diverge at the model call that changed.
func TestReplayWithChangedRepliesDiverges(t *testing.T) {
	h, envs, run := recordRun(t)
	other := &fakeModel{route: "fake:other", replies: []reply{
		use("look", `{"path":"a"}`), use("workspace_write", `{"path":"c"}`), say("wrote c"),
	}}
	rep, err := loop.Replay(t.Context(), envs, run, h.agent, h.deps.Tools, time.UTC, other)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diverged == nil || rep.Diverged.Type == "" {
		t.Fatalf("no divergence: %+v", rep.Lines)
	}
	var want map[string]any
	json.Unmarshal([]byte(rep.Diverged.Expected[len(rep.Diverged.Type)+1:]), &want)
	if rep.Diverged.Type != events.TypeRouteFallback && rep.Diverged.Type != events.TypeModelCalled && rep.Diverged.Type != events.TypeModelRetried {
		t.Errorf("diverged at %s, want the first model call", rep.Diverged.Type)
	}
}
