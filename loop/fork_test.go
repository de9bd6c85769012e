package loop_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
)

// forkRecording records two runs on fake:a: a greeting, then a run of
// three steps whose first tool result is so long that step 2's request
// compacts it (a context_compacted before the call), with turn notes on
// the message that opened it. It returns the harness, the second run's id
// and the conversation's events.
func forkRecording(t *testing.T) (*harness, string, []events.Envelope) {
	t.Helper()
	look := &counter{name: "look", out: strings.Repeat("line of a long file\n", 400)}
	write := &counter{name: "note_down"}
	h := newHarness(t, map[string][]reply{
		"fake:a": {say("hi"), use("look", `{"path":"a"}`), use("note_down", `{"text":"b"}`), say("done on a")},
		"fake:x": {say("done on x")},
	}, look, write)
	h.agent.Routes = []string{"fake:a"}
	// fake:x has room for the whole result: only the recorded compaction
	// can make its first request read the pointer fake:a read.
	h.spec = func(route string) llm.ModelSpec {
		if route == "fake:x" {
			return llm.ModelSpec{ContextWindow: 200000, MaxOutputTokens: 1000}
		}
		return llm.ModelSpec{ContextWindow: 6000, MaxOutputTokens: 1000}
	}
	h.send("hello")
	h.turn()
	h.append(&events.MessageReceived{Channel: "web", Text: "read a, note b", TurnNotes: &events.TurnNotes{Text: "# Notes\n\ntoday: walk"}})
	h.turn()
	runs := eventsOf[*events.RunStarted](h.events())
	if len(runs) != 2 {
		t.Fatalf("%d runs recorded, want 2", len(runs))
	}
	envs, err := h.log.ReadAll(t.Context(), events.Conv(h.conv).Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	compacted := false
	for _, e := range eventsOf[*events.ContextCompacted](h.events()) {
		compacted = compacted || e.Step == 2 && e.RunID == runs[1].RunID
	}
	if !compacted {
		t.Fatal("the recording did not compact before step 2: the test would prove less than it says")
	}
	return h, runs[1].RunID, envs
}

// fork appends the fork's events and runs its turn.
func (h *harness) fork(envs []events.Envelope, run string, step int, spec loop.ForkSpec) {
	h.t.Helper()
	evs, err := loop.ForkEvents(envs, run, step, spec)
	if err != nil {
		h.t.Fatal(err)
	}
	list := make([]events.Envelope, len(evs))
	for i, e := range evs {
		list[i] = events.MustNew(e)
	}
	if _, err := h.log.Append(h.t.Context(), events.Conv(spec.Conversation), 0, list...); err != nil {
		h.t.Fatal(err)
	}
	conv, err := h.convs.Get(h.t.Context(), spec.Conversation)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := loop.NewTurn(h.agent, h.deps, conv).Run(h.t.Context()); err != nil {
		h.t.Fatalf("fork turn: %v", err)
	}
}

// R-X-2, R-OBS-3: a fork at step 2 onto another route sends, as its first
// request, exactly the messages (and tools) the original's step 2 sent —
// the step's compaction and the turn notes included — and the new model
// answers step 2; the original's log is untouched.
func TestForkAtStepTwoSendsTheOriginalRequest(t *testing.T) {
	h, run, envs := forkRecording(t)
	orig := h.models["fake:a"]
	// fake:a saw: run 1 step 1, run 2 steps 1, 2, 3.
	if len(orig.seen) != 4 {
		t.Fatalf("fake:a saw %d requests, want 4", len(orig.seen))
	}
	want, wantTools := orig.seen[2], orig.offered[2]
	h.now = h.now.Add(time.Hour) // the same day: the system prompt's date line is the same

	h.fork(envs, run, 2, loop.ForkSpec{Conversation: "fork1", RunID: "frun1", Route: "fake:x", Title: "fork"})
	x := h.models["fake:x"]
	if len(x.seen) != 1 {
		t.Fatalf("fake:x saw %d requests, want 1", len(x.seen))
	}
	if !reflect.DeepEqual(x.seen[0], want) {
		t.Errorf("the fork's first request differs from the original's step 2:\n got %#v\nwant %#v", x.seen[0], want)
	}
	if !reflect.DeepEqual(x.offered[0], wantTools) {
		t.Errorf("tools declared %v, want %v", x.offered[0], wantTools)
	}
	if len(orig.seen) != 4 {
		t.Errorf("the fork called the original's route")
	}
	fenvs, err := h.log.ReadAll(t.Context(), events.Conv("fork1").Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var calls []*events.ModelCalled
	var fin *events.RunFinished
	for _, env := range fenvs {
		e, _ := env.Decode()
		switch e := e.(type) {
		case *events.ModelCalled:
			calls = append(calls, e)
		case *events.RunFinished:
			fin = e
		}
	}
	if len(calls) != 1 || calls[0].Route != "fake:x" || calls[0].Step != 2 || calls[0].RunID != "frun1" || calls[0].Text != "done on x" {
		t.Errorf("fork's model calls %+v, want one on fake:x answering step 2 of frun1", calls)
	}
	if fin == nil || fin.RunID != "frun1" || fin.Status != events.RunDone {
		t.Errorf("fork's run ended %+v, want frun1 done", fin)
	}
	after, err := h.log.ReadAll(t.Context(), events.Conv(h.conv).Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(envs) {
		t.Fatalf("the original has %d events after the fork, %d before", len(after), len(envs))
	}
	for i := range envs {
		if after[i].Seq != envs[i].Seq || after[i].ID != envs[i].ID || !bytes.Equal(after[i].Data, envs[i].Data) {
			t.Errorf("original event %d changed", i)
		}
	}
	// The fork's state is the original's history to step 2 plus the new reply.
	st, err := loop.LoadState(t.Context(), h.log, nil, "fork1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Route != "fake:x" || st.OpenRun != "" || st.CostUSD != 0 {
		t.Errorf("fork state route %q open %q cost %v", st.Route, st.OpenRun, st.CostUSD)
	}
	if last := st.Messages[len(st.Messages)-1]; last.Text != "done on x" {
		t.Errorf("fork's last message %+v", last)
	}
	// The fork's later turns stay on its route.
	x.replies = append(x.replies, say("still x"))
	conv, _ := h.convs.Get(t.Context(), "fork1")
	if _, err := conv.Append(t.Context(), func(*loop.State) ([]events.Event, error) {
		return []events.Event{&events.MessageReceived{Channel: "web", Text: "again"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := loop.NewTurn(h.agent, h.deps, conv).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(x.seen) != 2 || len(orig.seen) != 4 {
		t.Errorf("the fork's next turn went to fake:a (fake:x saw %d, fake:a %d)", len(x.seen), len(orig.seen))
	}
}

// A fork's run replays like any other (R-OBS-3): the loop takes it up
// from the state conversation_forked carries.
func TestForkedRunReplays(t *testing.T) {
	h, run, envs := forkRecording(t)
	h.fork(envs, run, 2, loop.ForkSpec{Conversation: "fork1", RunID: "frun1", Route: "fake:x"})
	fenvs, err := h.log.ReadAll(t.Context(), events.Conv("fork1").Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := loop.Replay(t.Context(), fenvs, "frun1", h.agent, h.deps.Tools, time.UTC, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diverged != nil || len(rep.Lines) == 0 {
		t.Fatalf("fork replay diverged: %+v (%d lines)", rep.Diverged, len(rep.Lines))
	}
	// A fork forks again from the steps it has: its run began at step 2.
	spec := loop.ForkSpec{Conversation: "fork2", RunID: "frun2", Route: "fake:x"}
	if _, err := loop.ForkEvents(fenvs, "frun1", 1, spec); !errors.Is(err, loop.ErrForkStep) || !strings.Contains(err.Error(), "steps 2 to 2") {
		t.Errorf("fork of a fork at step 1: %v, want ErrForkStep naming steps 2 to 2", err)
	}
	if _, err := loop.ForkEvents(fenvs, "frun1", 2, spec); err != nil {
		t.Errorf("fork of a fork at step 2: %v", err)
	}
}

// Bad fork points are refused with what is wrong: a step the run does not
// have, a run the conversation does not have.
func TestForkRefusesBadStep(t *testing.T) {
	_, run, envs := forkRecording(t)
	spec := loop.ForkSpec{Conversation: "f", RunID: "fr", Route: "fake:x"}
	for _, step := range []int{0, -1, 4, 99} {
		_, err := loop.ForkEvents(envs, run, step, spec)
		if !errors.Is(err, loop.ErrForkStep) || !strings.Contains(err.Error(), "steps 1 to 3") {
			t.Errorf("step %d: %v, want ErrForkStep naming steps 1 to 3", step, err)
		}
	}
	if _, err := loop.ForkEvents(envs, "nope", 1, spec); !errors.Is(err, loop.ErrForkRun) {
		t.Errorf("unknown run: %v, want ErrForkRun", err)
	}
}

// R-X-2: the fork's first request sends the system prompt the original's
// step sent (recorded on its model_called), not the agent's files as they
// are when forking: AGENTS.md changed and three days passed, yet the
// request equals the original's step 2, system message included. The
// fork's later steps read the files anew (R-HOME-4). A recording older
// than model_called's system field forks as before: the files read anew.
func TestForkFirstRequestSendsTheOriginalSystemPrompt(t *testing.T) {
	h, run, envs := forkRecording(t)
	orig := h.models["fake:a"]
	want := orig.seen[2]
	evs, err := loop.ForkEvents(envs, run, 2, loop.ForkSpec{Conversation: "f", RunID: "fr", Route: "fake:x"})
	if err != nil {
		t.Fatal(err)
	}
	forked := evs[2].(*events.ConversationForked)
	if sys := want[0].Parts[0].Text; forked.System != sys || !strings.Contains(sys, "Today: 2026-11-30.") {
		t.Fatalf("conversation_forked system %q, want the original step 2's %q", forked.System, sys)
	}
	if err := os.WriteFile(filepath.Join(h.agent.Dir, "AGENTS.md"), []byte("# Rules\n\nAnswer in French."), 0o644); err != nil {
		t.Fatal(err)
	}
	h.now = h.now.Add(72 * time.Hour)

	h.fork(envs, run, 2, loop.ForkSpec{Conversation: "fork1", RunID: "frun1", Route: "fake:x", Title: "fork"})
	x := h.models["fake:x"]
	if len(x.seen) != 1 || !reflect.DeepEqual(x.seen[0], want) {
		t.Fatalf("the fork's first request differs from the original's step 2:\n got %#v\nwant %#v", x.seen, want)
	}
	// Its model_called records what it sent, so a fork of the fork pins it too.
	var sent []string
	main := h.conv
	h.conv = "fork1"
	calls := eventsOf[*events.ModelCalled](h.events())
	h.conv = main
	for _, e := range calls {
		sent = append(sent, e.System)
	}
	if len(sent) != 1 || sent[0] != forked.System {
		t.Errorf("the fork's model_called recorded systems %q, want the pinned one", sent)
	}
	// The fork's next turn reads the files as they are now.
	x.replies = append(x.replies, say("toujours x"))
	conv, _ := h.convs.Get(t.Context(), "fork1")
	if _, err := conv.Append(t.Context(), func(*loop.State) ([]events.Event, error) {
		return []events.Event{&events.MessageReceived{Channel: "web", Text: "again"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := loop.NewTurn(h.agent, h.deps, conv).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := x.seen[1][0].Parts[0].Text; !strings.Contains(got, "Answer in French.") || !strings.Contains(got, "Today: 2026-12-03.") {
		t.Errorf("the fork's next turn's system prompt %q: want today's files and date", got)
	}

	// An older recording (no system on its model_called) forks with the
	// files read anew.
	old := make([]events.Envelope, len(envs))
	for i, env := range envs {
		old[i] = env
		if env.Type == events.TypeModelCalled {
			var m map[string]any
			if err := json.Unmarshal(env.Data, &m); err != nil {
				t.Fatal(err)
			}
			delete(m, "system")
			old[i].Data, _ = json.Marshal(m)
		}
	}
	x.replies = append(x.replies, say("done again"))
	h.fork(old, run, 2, loop.ForkSpec{Conversation: "fork2", RunID: "frun2", Route: "fake:x", Title: "old"})
	if len(x.seen) != 3 {
		t.Fatalf("fake:x saw %d requests, want 3", len(x.seen))
	}
	if got := x.seen[2][0].Parts[0].Text; !strings.Contains(got, "Answer in French.") || !reflect.DeepEqual(x.seen[2][1:], want[1:]) {
		t.Errorf("an unpinned fork's first request: system %q (want the files now), messages equal %v", got, reflect.DeepEqual(x.seen[2][1:], want[1:]))
	}
}

// The fork carries what step N's request was built from — the loaded MCP
// tools, what the turn notes and canvases told, the compaction, the run's
// untrusted mark (memory writes after it stay marked, R-X-7) — and nothing
// of what waited in the original or was granted there: a message queued
// meanwhile, a steer not yet applied, an "always" approval, its spending.
func TestForkCarriesWhatTheRequestReadAndNothingWaiting(t *testing.T) {
	told := events.NoteTold{Key: "memory/2026-11-30.md", Len: 4, Digest: strings.Repeat("0", 64)}
	cost := 0.25
	call := func(id, name string) []events.ToolCallRequest {
		return []events.ToolCallRequest{{ID: id, Name: name, Arguments: []byte(`{}`)}}
	}
	evs := []events.Event{
		&events.ConversationOpened{Agent: "master", Channel: "web"},
		&events.MessageReceived{Channel: "web", Text: "find and write", TurnNotes: &events.TurnNotes{Text: "notes", Told: []events.NoteTold{told}}},
		&events.RunStarted{RunID: "r", Agent: "master", Trigger: "message"},
		&events.ModelCalled{RunID: "r", Step: 1, Route: "fake:a", Model: "a", CostUSD: &cost, ToolCalls: call("c1", "tool_search")},
		&events.ToolCompleted{RunID: "r", Step: 1, CallID: "c1", Tool: "tool_search", Output: "<<<UNTRUSTED DATA id=1>>> found",
			Meta: map[string]any{"loaded": []string{"mcp__s__echo"}}},
		&events.ModelCalled{RunID: "r", Step: 2, Route: "fake:a", Model: "a", CostUSD: &cost, ToolCalls: call("c2", "workspace_write")},
		&events.ApprovalRequested{ApprovalID: "a1", RunID: "r", Step: 2, CallID: "c2", Tool: "workspace_write", ExpiresAt: time.Now().Add(time.Hour)},
		&events.ApprovalDecided{ApprovalID: "a1", Decision: events.DecisionApproved, Always: true},
		&events.ToolCompleted{RunID: "r", Step: 2, CallID: "c2", Tool: "workspace_write", Output: "wrote"},
		&events.SteerReceived{Channel: "web", Text: "not yet applied"},
		&events.ContextCompacted{RunID: "r", Step: 3, Stage: events.CompactMicro, Results: []events.CompactedResult{{CallID: "c1", Chars: 30, Text: "[compacted]"}}},
		&events.ModelCalled{RunID: "r", Step: 3, Route: "fake:a", Model: "a", CostUSD: &cost, Text: "done"},
		&events.MessageReceived{Channel: "web", Text: "queued after step 3"},
		&events.RunFinished{RunID: "r", Status: events.RunDone},
	}
	envs := make([]events.Envelope, len(evs))
	for i, e := range evs {
		envs[i] = events.MustNew(e)
		envs[i].Subject, envs[i].Seq = events.Conv("orig").Subject(envs[i].Type), uint64(i+1)
	}
	out, err := loop.ForkEvents(envs, "r", 3, loop.ForkSpec{Conversation: "f", RunID: "fr", Route: "fake:x"})
	if err != nil {
		t.Fatal(err)
	}
	st := &loop.State{Conversation: "f"}
	for i, e := range out {
		env := events.MustNew(e)
		env.Subject, env.Seq = events.Conv("f").Subject(env.Type), uint64(i+1)
		if err := st.Apply(env); err != nil {
			t.Fatal(err)
		}
	}
	switch {
	case st.OpenRun != "fr" || st.Step != 2 || st.Route != "fake:x":
		t.Errorf("open run %q step %d route %q, want fr before step 3 on fake:x", st.OpenRun, st.Step, st.Route)
	case len(st.Messages) != 5 || st.Messages[4].Text != "wrote":
		t.Errorf("history %+v, want the 5 messages step 3's request read", st.Messages)
	case !reflect.DeepEqual(st.Loaded, []string{"mcp__s__echo"}):
		t.Errorf("loaded MCP tools %v", st.Loaded)
	case st.Told[told.Key] != told:
		t.Errorf("turn notes told %v", st.Told)
	case st.Compaction.Results["c1"] != "[compacted]":
		t.Errorf("compaction %+v, want step 3's micro compaction", st.Compaction)
	case st.RunUntrusted != "tool_search":
		t.Errorf("untrusted mark %q, want tool_search", st.RunUntrusted)
	case len(st.AutoApprove) != 0 || len(st.Queued) != 0 || len(st.Steers) != 0 || st.CostUSD != 0 || st.Approvals != nil:
		t.Errorf("carried what waited or was granted: auto %v queued %d steers %d cost %v approvals %v",
			st.AutoApprove, len(st.Queued), len(st.Steers), st.CostUSD, st.Approvals)
	}
	if _, err := loop.ForkEvents(envs, "r", 1, loop.ForkSpec{Conversation: "f2", RunID: "fr2", Route: "fake:x"}); err != nil {
		t.Errorf("step 1: %v", err)
	}
}
