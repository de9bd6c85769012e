package loop_test

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
)

type memSnapshots struct {
	mu    sync.Mutex
	data  map[string][]byte
	saves int
}

func (m *memSnapshots) LoadSnapshot(conv string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data[conv], nil
}

func (m *memSnapshots) SaveSnapshot(conv string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.data == nil {
		m.data = map[string][]byte{}
	}
	m.data[conv] = data
	m.saves++
	return nil
}

var _ loop.Snapshots = (*memSnapshots)(nil)

func appendTurn(t testing.TB, log *events.Log, conv string, last uint64, i int) uint64 {
	t.Helper()
	run := fmt.Sprintf("r%d", i)
	c := 0.001
	stored, err := log.Append(t.Context(), events.Conv(conv), last,
		events.MustNew(&events.MessageReceived{Channel: "web", Text: fmt.Sprint("question ", i)}),
		events.MustNew(&events.RunStarted{RunID: run, Agent: "master", Trigger: "message"}),
		events.MustNew(&events.ModelCalled{RunID: run, Step: 1, Route: "fake:echo", Model: "echo", CostUSD: &c,
			ToolCalls: []events.ToolCallRequest{{ID: "c", Name: "workspace_read", Arguments: json.RawMessage(`{"path":"x"}`)}}}),
		events.MustNew(&events.ToolCompleted{RunID: run, Step: 1, CallID: "c", Tool: "workspace_read", Output: "content"}),
		events.MustNew(&events.ModelCalled{RunID: run, Step: 2, Route: "fake:echo", Model: "echo", Text: fmt.Sprint("answer ", i)}),
		events.MustNew(&events.RunFinished{RunID: run, Status: events.RunDone}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return stored[len(stored)-1].Seq
}

func TestStateFoldsConversationIntoModelMessages(t *testing.T) {
	_, log := eventstest.Start(t)
	opened, _ := log.Append(t.Context(), events.Conv("c"), 0, events.MustNew(&events.ConversationOpened{Agent: "master", Channel: "web"}))
	appendTurn(t, log, "c", opened[0].Seq, 1)
	st, err := loop.LoadState(t.Context(), log, nil, "c")
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range st.Messages {
		roles = append(roles, m.Role)
	}
	if got, want := fmt.Sprint(roles), "[user assistant tool assistant]"; got != want {
		t.Errorf("roles = %s, want %s", got, want)
	}
	if st.Agent != "master" || st.OpenRun != "" || st.CostUSD != 0.001 || st.UnknownCostCalls != 1 {
		t.Errorf("state = %+v", st)
	}
}

// R-ES-5 / R-PERF: a snapshot plus the tail gives exactly the state of a
// cold replay, and a long tail is snapshotted for next time.
func TestSnapshotPlusTailEqualsColdReplay(t *testing.T) {
	_, log := eventstest.Start(t)
	ctx := t.Context()
	snaps := &memSnapshots{}
	var last uint64
	for i := range 50 { // 300 events: more than SnapshotEvery
		last = appendTurn(t, log, "c", last, i)
	}
	first, err := loop.LoadState(ctx, log, snaps, "c")
	if err != nil {
		t.Fatal(err)
	}
	if snaps.saves != 1 {
		t.Fatalf("saves = %d, want 1 after a %d-event tail", snaps.saves, 300)
	}
	last = appendTurn(t, log, "c", last, 50)
	warm, err := loop.LoadState(ctx, log, snaps, "c")
	if err != nil {
		t.Fatal(err)
	}
	cold, err := loop.LoadState(ctx, log, nil, "c")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(warm, cold) {
		t.Errorf("snapshot+tail state differs from cold replay")
	}
	if warm.Seq != last || len(warm.Messages) != len(first.Messages)+4 {
		t.Errorf("warm seq %d (want %d), %d messages (want %d)", warm.Seq, last, len(warm.Messages), len(first.Messages)+4)
	}
	if snaps.saves != 1 {
		t.Errorf("a short tail wrote a snapshot (saves = %d)", snaps.saves)
	}
}

func TestCorruptSnapshotFallsBackToColdReplay(t *testing.T) {
	_, log := eventstest.Start(t)
	appendTurn(t, log, "c", 0, 1)
	snaps := &memSnapshots{data: map[string][]byte{"c": []byte("{not json")}}
	st, err := loop.LoadState(t.Context(), log, snaps, "c")
	if err != nil || len(st.Messages) != 4 {
		t.Fatalf("state = %+v, %v", st, err)
	}
}

// A steer the run never reached a tool boundary for waits as a message,
// in the order it was stored among the messages queued meanwhile: the
// owner's words in order, and each message's turn notes after the ones
// they build on ("new lines since last told").
func TestLeftoverSteerKeepsItsPlaceAmongQueuedMessages(t *testing.T) {
	_, log := eventstest.Start(t)
	conv := "steer-order"
	if _, err := log.Append(t.Context(), events.Conv(conv), 0,
		events.MustNew(&events.ConversationOpened{Agent: "master", Channel: "web"}),
		events.MustNew(&events.MessageReceived{Channel: "web", Text: "first"}),
		events.MustNew(&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"}),
		events.MustNew(&events.SteerReceived{Channel: "web", Text: "steer sent second"}),
		events.MustNew(&events.MessageReceived{Channel: "web", Text: "message sent third"}),
		events.MustNew(&events.RunFinished{RunID: "r1", Status: events.RunDone}),
	); err != nil {
		t.Fatal(err)
	}
	st, err := loop.LoadState(t.Context(), log, nil, conv)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, q := range st.Queued {
		got = append(got, q.Text)
	}
	if want := []string{"steer sent second", "message sent third"}; !reflect.DeepEqual(got, want) {
		t.Errorf("queued = %q, want %q", got, want)
	}
}

// R-DEL: a child's spending is the parent's, and a child call of unknown
// cost stays unknown in the parent (its total is a lower bound, never
// silently complete).
func TestDelegateCostAndUnknownCallsReachTheParent(t *testing.T) {
	var st loop.State
	known := 0.01
	for _, e := range []events.Event{
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "c1", Tool: loop.DelegateTool, Output: "ok",
			Delegate: &events.DelegateResult{Agent: "coach", Conversation: "d1", Status: events.RunDone, CostUSD: &known, UnknownCostCalls: 2}},
		&events.ToolCompleted{RunID: "r1", Step: 2, CallID: "c2", Tool: loop.DelegateTool, Output: "ok",
			Delegate: &events.DelegateResult{Agent: "coach", Conversation: "d2", Status: events.RunDone}},
	} {
		if err := st.Apply(events.MustNew(e)); err != nil {
			t.Fatal(err)
		}
	}
	if st.CostUSD != 0.01 || st.UnknownCostCalls != 3 {
		t.Errorf("cost %v, unknown calls %d; want 0.01 and 3", st.CostUSD, st.UnknownCostCalls)
	}
}

// The guard's count and the run's escalation are part of the folded state,
// kept by a snapshot as by a cold replay.
func TestGuardAndEscalationFoldAndSurviveSnapshot(t *testing.T) {
	_, log := eventstest.Start(t)
	ctx := t.Context()
	evs := []events.Envelope{
		events.MustNew(&events.ConversationOpened{Agent: "master", Channel: "web"}),
		events.MustNew(&events.MessageReceived{Channel: "web", Text: "build"}),
		events.MustNew(&events.RunStarted{RunID: "r", Agent: "master", Trigger: "message"}),
	}
	for i := 1; i <= 3; i++ {
		id := fmt.Sprint("c", i)
		evs = append(evs,
			events.MustNew(&events.ModelCalled{RunID: "r", Step: i, Route: "fake:a", Model: "a",
				ToolCalls: []events.ToolCallRequest{{ID: id, Name: "shell_run", Arguments: json.RawMessage(`{"command":"make"}`)}}}),
			events.MustNew(&events.ToolCompleted{RunID: "r", Step: i, CallID: id, Tool: "shell_run", Output: "failed"}))
	}
	evs = append(evs,
		events.MustNew(&events.GuardReminded{RunID: "r", Step: 3, Tool: "shell_run", Count: 3, Text: "[Harness reminder] …"}),
		events.MustNew(&events.Escalated{RunID: "r", Step: 3, Reason: "error", Route: "fake:strong", Error: "500"}))
	if _, err := log.Append(ctx, events.Conv("c"), 0, evs...); err != nil {
		t.Fatal(err)
	}
	cold, err := loop.LoadState(ctx, log, nil, "c")
	if err != nil {
		t.Fatal(err)
	}
	if g := cold.Guard; g.Count() != 3 || g.Tools() != "shell_run" || !g.Reminded || g.Verdict() != loop.GuardContinue || !cold.Escalated {
		t.Fatalf("folded guard %+v, escalated %v", g, cold.Escalated)
	}
	snaps := &memSnapshots{}
	if err := loop.SaveSnapshot(snaps, cold); err != nil {
		t.Fatal(err)
	}
	warm, err := loop.LoadState(ctx, log, snaps, "c")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(warm, cold) {
		t.Errorf("snapshot state %+v differs from cold replay %+v", warm.Guard, cold.Guard)
	}
}

// R-LOOP-5: the harness's own model call on a conversation (a summary)
// counts into its spend, known or unknown, but its text is no reply: the
// model's history and the step count are the turn's alone.
func TestHarnessModelCallCountsCostButIsNoReply(t *testing.T) {
	_, log := eventstest.Start(t)
	ctx := t.Context()
	evs := []events.Envelope{
		events.MustNew(&events.ConversationOpened{Agent: "master", Channel: "web"}),
		events.MustNew(&events.MessageReceived{Channel: "web", Text: "hi"}),
		events.MustNew(&events.RunStarted{RunID: "r", Agent: "master", Trigger: "message"}),
		events.MustNew(&events.ModelCalled{RunID: "r", Step: 1, Route: "fake:a", Model: "a", Text: "hello", CostUSD: usd(0.01)}),
		events.MustNew(&events.ModelCalled{RunID: "r", Step: 7, Purpose: events.PurposeCompaction, Route: "fake:a", Model: "a", Text: "compacted", CostUSD: usd(0.02)}),
		events.MustNew(&events.ModelCalled{Purpose: events.PurposeSummary, Route: "fake:a", Model: "a", Text: "a summary"}),
	}
	if _, err := log.Append(ctx, events.Conv("c"), 0, evs...); err != nil {
		t.Fatal(err)
	}
	st, err := loop.LoadState(ctx, log, nil, "c")
	if err != nil {
		t.Fatal(err)
	}
	var replies []string
	for _, m := range st.Messages {
		if m.Role == loop.RoleAssistant {
			replies = append(replies, m.Text)
		}
	}
	if !slices.Equal(replies, []string{"hello"}) || st.Step != 1 {
		t.Errorf("replies %q, step %d; want only the turn's reply at step 1", replies, st.Step)
	}
	if math.Abs(st.CostUSD-0.03) > 1e-9 || st.UnknownCostCalls != 1 {
		t.Errorf("spend $%v with %d unknown, want $0.03 with 1 unknown", st.CostUSD, st.UnknownCostCalls)
	}
}

func usd(v float64) *float64 { return &v }

// R-MCP: the loaded set is derived from the conversation's own events
// (tool_search results' meta.loaded), so a cold replay and a snapshot give
// the same set; other tools' meta does not load anything.
func TestToolSearchLoadedSetFoldedFromEvents(t *testing.T) {
	_, log := eventstest.Start(t)
	ctx := t.Context()
	evs := []events.Envelope{
		events.MustNew(&events.ConversationOpened{Agent: "master", Channel: "web"}),
		events.MustNew(&events.MessageReceived{Channel: "web", Text: "find"}),
		events.MustNew(&events.RunStarted{RunID: "r", Agent: "master", Trigger: "message"}),
		events.MustNew(&events.ModelCalled{RunID: "r", Step: 1, Route: "fake:a", Model: "a",
			ToolCalls: []events.ToolCallRequest{{ID: "c1", Name: "tool_search", Arguments: json.RawMessage(`{"query":"echo"}`)}}}),
		events.MustNew(&events.ToolCompleted{RunID: "r", Step: 1, CallID: "c1", Tool: "tool_search", Output: "found",
			Meta: map[string]any{"loaded": []string{"mcp__s__echo", "mcp__s__sum"}}}),
		events.MustNew(&events.ToolCompleted{RunID: "r", Step: 1, CallID: "c2", Tool: "workspace_read", Output: "x",
			Meta: map[string]any{"loaded": []string{"mcp__s__sneaky"}}}),
		events.MustNew(&events.ToolCompleted{RunID: "r", Step: 1, CallID: "c3", Tool: "tool_search", Output: "found",
			Meta: map[string]any{"loaded": []string{"mcp__s__echo"}}}),
	}
	if _, err := log.Append(ctx, events.Conv("c"), 0, evs...); err != nil {
		t.Fatal(err)
	}
	cold, err := loop.LoadState(ctx, log, nil, "c")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cold.Loaded, []string{"mcp__s__echo", "mcp__s__sum"}) {
		t.Fatalf("loaded %v", cold.Loaded)
	}
	snaps := &memSnapshots{}
	if err := loop.SaveSnapshot(snaps, cold); err != nil {
		t.Fatal(err)
	}
	warm, err := loop.LoadState(ctx, log, snaps, "c")
	if err != nil || !reflect.DeepEqual(warm.Loaded, cold.Loaded) {
		t.Errorf("snapshot loaded %v (%v), cold %v", warm.Loaded, err, cold.Loaded)
	}
}
