package projections

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"go.etcd.io/bbolt"
)

func TestConversationStatusAndRunNesting(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	db := openDB(t, "")
	r := startRunner(t, log, db, config{})
	s := newSeeder(t, log)
	// step appends to conversation conv and checks its status.
	step := func(conv string, e events.Event, wantStatus string) {
		t.Helper()
		if err := r.WaitFor(ctx, s.conv(conv, e)); err != nil {
			t.Fatal(err)
		}
		c, err := GetConversation(db, conv)
		if err != nil {
			t.Fatal(err)
		}
		if c.Status != wantStatus {
			t.Errorf("after %s on %s: status %q, want %q", e.EventType(), conv, c.Status, wantStatus)
		}
	}
	long := strings.Repeat("Plan my\n  week ", 10)
	step("c1", &events.ConversationOpened{Agent: "coach", Channel: "web", Day: "2026-11-30"}, ConversationIdle)
	step("c1", &events.MessageReceived{Channel: "web", Text: long}, ConversationIdle)
	step("c1", &events.RunStarted{RunID: "r1", Agent: "coach", Trigger: "message"}, ConversationRunning)
	step("c1", &events.ModelCalled{RunID: "r1", Step: 1, Route: "a", Model: "m", InputTokens: 10, OutputTokens: 5, CostUSD: cost(0.25),
		ToolCalls: []events.ToolCallRequest{{ID: "t1", Name: "workspace_read", Arguments: json.RawMessage(`{}`)}}}, ConversationRunning)
	step("c1", &events.ToolCalled{RunID: "r1", Step: 1, CallID: "t1", Tool: "workspace_read", Arguments: json.RawMessage(`{"path":"a"}`)}, ConversationRunning)
	step("c1", &events.ToolCompleted{RunID: "r1", Step: 1, CallID: "t1", Tool: "workspace_read", Output: "text", DurationMS: 7}, ConversationRunning)
	step("c1", &events.ModelCalled{RunID: "r1", Step: 2, Route: "b", Model: "m", InputTokens: 20, OutputTokens: 1, CostUSD: nil}, ConversationRunning)
	step("c1", &events.ToolCalled{RunID: "r1", Step: 2, CallID: "t2", Tool: "shell_run", Arguments: json.RawMessage(`{}`)}, ConversationRunning)
	// r1 delegates to d1 (another conversation) and runs a child in c1.
	step("d1", &events.ConversationOpened{Agent: "chef", Channel: "delegate", RootID: "c1", ParentRunID: "r1"}, ConversationIdle)
	step("d1", &events.RunStarted{RunID: "r2", Agent: "chef", Trigger: "delegate", ParentRunID: "r1"}, ConversationRunning)
	step("c1", &events.RunStarted{RunID: "r3", Agent: "coach", Trigger: "delegate", ParentRunID: "r1"}, ConversationRunning)
	step("c1", &events.RunStarted{RunID: "r4", Agent: "coach", Trigger: "delegate", ParentRunID: "r3"}, ConversationRunning)
	step("d1", &events.RunFinished{RunID: "r2", Status: events.RunDone}, ConversationIdle)
	step("c1", &events.RunFinished{RunID: "r1", Status: events.RunHalted, Reason: "max_steps"}, ConversationRunning) // r3, r4 still run
	step("c1", &events.RunFinished{RunID: "r3", Status: events.RunDone}, ConversationRunning)
	// The last run failed: the conversation says so until the next message.
	step("c1", &events.RunFinished{RunID: "r4", Status: events.RunFailed, Error: "boom"}, ConversationFailed)
	step("c1", &events.ModelCalled{RunID: "ghost", Step: 1}, ConversationFailed)
	step("d1", &events.ConversationClosed{Reason: "done"}, ConversationClosed)
	// Approvals and halts.
	exp := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	step("c2", &events.MessageReceived{Channel: "web", Text: "write it"}, ConversationIdle)
	step("c2", &events.RunStarted{RunID: "r9", Agent: "master", Trigger: "message"}, ConversationRunning)
	step("c2", &events.ApprovalRequested{ApprovalID: "a1", RunID: "r9", Step: 1, CallID: "k1", Tool: "workspace_write", Arguments: json.RawMessage(`{}`), ExpiresAt: exp}, ConversationAwaitingApproval)
	step("c2", &events.ApprovalDecided{ApprovalID: "a1", Decision: events.DecisionApproved}, ConversationRunning)
	step("c2", &events.RunFinished{RunID: "r9", Status: events.RunHalted, Reason: "max_steps"}, ConversationHalted)
	if c2, _ := GetConversation(db, "c2"); c2.Ended == nil || c2.Ended.Reason != "max_steps" || c2.Ended.RunID != "r9" || c2.Halted != "max_steps" {
		t.Errorf("c2 after the halt: ended %+v, halted %q; want r9 halted on max_steps", c2.Ended, c2.Halted)
	}
	// Halted until the next message (issue 10 item 8), not until the next run.
	step("c2", &events.MessageReceived{Channel: "web", Text: "go on"}, ConversationIdle)
	if c2, _ := GetConversation(db, "c2"); c2.Ended != nil || c2.Halted != "" {
		t.Errorf("c2 after the next message: ended %+v, halted %q; want neither", c2.Ended, c2.Halted)
	}
	if c2, _ := GetConversation(db, "c2"); c2.Queued != 1 {
		t.Errorf("c2 queued = %d, want 1", c2.Queued)
	}
	step("c2", &events.RunStarted{RunID: "r10", Agent: "master", Trigger: "message"}, ConversationRunning)
	if conv, err := FindApproval(db, "a1"); err != nil || conv != "c2" {
		t.Errorf("FindApproval(a1) = %q, %v", conv, err)
	}

	c1, err := GetConversation(db, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if c1.Messages != 1 || c1.LastRunID != "r4" || c1.Agent != "coach" || c1.LastSeq != s.last[events.Conv("c1")] {
		t.Errorf("c1: %+v", c1)
	}
	if utf8.RuneCountInString(c1.Title) != titleRunes || !strings.HasPrefix(c1.Title, "Plan my week Plan") || !strings.HasSuffix(c1.Title, "…") {
		t.Errorf("title %q: want the first message on one line, cut to %d runes", c1.Title, titleRunes)
	}
	if _, err := GetConversation(db, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing conversation: got %v, want ErrNotFound", err)
	}

	list, err := ListConversations(db, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(list, func(c Conversation) string { return c.ID }), []string{"c2", "d1", "c1"}; !slices.Equal(got, want) {
		t.Errorf("conversations newest first: got %v, want %v", got, want)
	}
	if list, _ := ListConversations(db, 1); len(list) != 1 {
		t.Errorf("limit 1: got %d", len(list))
	}

	r1, err := GetRun(db, "r1")
	if err != nil {
		t.Fatal(err)
	}
	wantTotals := Totals{Steps: 2, ModelCalls: 2, ToolCalls: 2, InputTokens: 30, OutputTokens: 6, CostUSD: 0.25, UnknownCostCalls: 1}
	if r1.Totals != wantTotals || r1.Status != events.RunHalted || r1.Reason != "max_steps" || r1.Finished == nil {
		t.Errorf("r1: status %s %s totals %+v; want halted max_steps %+v", r1.Status, r1.Reason, r1.Totals, wantTotals)
	}
	if len(r1.Steps) != 2 || len(r1.Steps[0].ToolCalls) != 1 || len(r1.Steps[1].ToolCalls) != 1 {
		t.Fatalf("r1 steps: %+v", r1.Steps)
	}
	t1, t2 := r1.Steps[0].ToolCalls[0], r1.Steps[1].ToolCalls[0]
	if want := (ToolCall{CallID: "t1", Tool: "workspace_read", Args: `{"path":"a"}`, Output: "text", DurationMS: 7, Completed: true}); !reflect.DeepEqual(t1, want) {
		t.Errorf("t1: got %+v, want %+v", t1, want)
	}
	if t2.Completed || t2.Tool != "shell_run" {
		t.Errorf("t2 has no completion: %+v", t2)
	}
	if mc := r1.Steps[1].ModelCalls[0]; mc.CostUSD != nil || mc.Route != "b" {
		t.Errorf("step 2 model call: %+v", mc)
	}
	if got, want := ids(r1.Children, runID), []string{"r2", "r3"}; !slices.Equal(got, want) {
		t.Errorf("r1 children: got %v, want %v", got, want)
	}

	runs, err := ListRuns(db, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(runs, runID), []string{"r1"}; !slices.Equal(got, want) {
		t.Fatalf("runs of c1: got %v, want %v (children nested)", got, want)
	}
	if r3 := runs[0].Children[1]; r3.RunID != "r3" || len(r3.Children) != 1 || r3.Children[0].RunID != "r4" || r3.Children[0].Status != events.RunFailed {
		t.Errorf("r3 nested under r1 with r4 under it: %+v", r3)
	}
	if runs, _ := ListRuns(db, "d1"); !slices.Equal(ids(runs, runID), []string{"r2"}) {
		t.Errorf("runs of d1: got %v, want [r2] (its parent is in c1)", ids(runs, runID))
	}
	orphans, err := Orphans(db)
	if err != nil {
		t.Fatal(err)
	}
	if len(orphans) != 1 || orphans[0].RunID != "ghost" || orphans[0].Type != events.TypeModelCalled {
		t.Errorf("orphans: %+v", orphans)
	}
}

func runID(r RunSummary) string { return r.RunID }

func ids[T any](xs []T, id func(T) string) []string {
	out := []string{}
	for _, x := range xs {
		out = append(out, id(x))
	}
	return out
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "ab…"},
		{"ééééé", 4, "ééé…"},
		{"🏃🏃", 1, "…"},
	} {
		if got := truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestFailedRunStatusUntilNextMessage (issue 10 item 8): a failed run
// leaves the conversation failed with its reason and error, and the next
// owner message clears it; a done run leaves no ending.
func TestFailedRunStatusUntilNextMessage(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	db := openDB(t, "")
	r := startRunner(t, log, db, config{})
	s := newSeeder(t, log)
	apply := func(e events.Event) Conversation {
		t.Helper()
		if err := r.WaitFor(ctx, s.conv("f1", e)); err != nil {
			t.Fatal(err)
		}
		c, err := GetConversation(db, "f1")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	apply(&events.MessageReceived{Channel: "web", Text: "hi"})
	apply(&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"})
	c := apply(&events.RunFinished{RunID: "r1", Status: events.RunFailed, Reason: "model_error", Error: "openrouter: permanent model error: HTTP 401: no auth"})
	if c.Status != ConversationFailed || c.Ended == nil || c.Ended.Reason != "model_error" || !strings.Contains(c.Ended.Error, "401") {
		t.Fatalf("after the failed run: status %q, ended %+v; want failed with model_error and its error", c.Status, c.Ended)
	}
	if b, _ := json.Marshal(c); !strings.Contains(string(b), `"status":"failed"`) {
		t.Errorf("the API JSON does not say failed: %s", b)
	}
	if c = apply(&events.MessageReceived{Channel: "web", Text: "again"}); c.Status != ConversationIdle || c.Ended != nil {
		t.Errorf("after the next message: status %q, ended %+v; want idle and no ending", c.Status, c.Ended)
	}
	apply(&events.RunStarted{RunID: "r2", Agent: "master", Trigger: "message"})
	if c = apply(&events.RunFinished{RunID: "r2", Status: events.RunDone}); c.Status != ConversationIdle || c.Ended != nil {
		t.Errorf("after a done run: status %q, ended %+v", c.Status, c.Ended)
	}
}

// Start is O(open work): Recoverable reads the index of conversations with
// work (running, awaiting approval, a message queued), which every status
// change keeps in step — not the whole conversation list.
func TestRecoverableReadsTheOpenIndex(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	db := openDB(t, "")
	r := startRunner(t, log, db, config{})
	s := newSeeder(t, log)
	exp := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s.conv("idle", &events.MessageReceived{Channel: "web", Text: "hi"})
	s.conv("idle", &events.RunStarted{RunID: "r1", Agent: "coach", Trigger: "message"})
	s.conv("idle", &events.RunFinished{RunID: "r1", Status: events.RunDone})
	s.conv("queued", &events.MessageReceived{Channel: "web", Text: "waiting"})
	s.conv("running", &events.MessageReceived{Channel: "web", Text: "go"})
	s.conv("running", &events.RunStarted{RunID: "r2", Agent: "coach", Trigger: "message"})
	s.conv("asking", &events.RunStarted{RunID: "r3", Agent: "coach", Trigger: "message"})
	s.conv("asking", &events.ApprovalRequested{ApprovalID: "a1", RunID: "r3", CallID: "t1", Tool: "shell_run", Arguments: json.RawMessage(`{}`), ExpiresAt: exp})
	last := s.conv("asking", &events.ApprovalDecided{ApprovalID: "a1", Decision: events.DecisionApproved})
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	ids, err := Recoverable(db)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"asking", "queued", "running"}; !slices.Equal(ids, want) {
		t.Fatalf("recoverable %v, want %v", ids, want)
	}
	last = s.conv("asking", &events.RunFinished{RunID: "r3", Status: events.RunDone})
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if ids, _ := Recoverable(db); !slices.Equal(ids, []string{"queued", "running"}) {
		t.Errorf("recoverable after the run ended: %v", ids)
	}

	// A database from before the index (conversations at version 1) is
	// projected again at the next Open, and the index is filled.
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket([]byte(bucketConvOpen)); err != nil {
			return err
		}
		return tx.Bucket([]byte(versionBucket)).Delete([]byte("conversations"))
	})
	if err != nil {
		t.Fatal(err)
	}
	r = startRunner(t, log, db, config{})
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if ids, _ := Recoverable(db); !slices.Equal(ids, []string{"queued", "running"}) {
		t.Errorf("recoverable after the upgrade: %v", ids)
	}
}
