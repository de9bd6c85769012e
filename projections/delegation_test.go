package projections

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// R-DEL: a delegated child's approvals surface on its root (listed with the
// child's id, root awaiting_approval, FindApproval still naming the child),
// and its run nests under the delegate call with its steps; the parent
// run's cost includes the child's.
func TestDelegationSurfacesOnRootAndNestsUnderCall(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	db := openDB(t, "")
	r := startRunner(t, log, db, config{})
	s := newSeeder(t, log)
	apply := func(conv string, e events.Event) {
		t.Helper()
		if err := r.WaitFor(ctx, s.conv(conv, e)); err != nil {
			t.Fatal(err)
		}
	}
	root := func() Conversation {
		t.Helper()
		c, err := GetConversation(db, "c1")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	exp := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	apply("c1", &events.ConversationOpened{Agent: "master", Channel: "web"})
	apply("c1", &events.MessageReceived{Channel: "web", Text: "plan my run"})
	apply("c1", &events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"})
	apply("c1", &events.ModelCalled{RunID: "r1", Step: 1, Route: "a", Model: "m", CostUSD: cost(0.01),
		ToolCalls: []events.ToolCallRequest{{ID: "t1", Name: "delegate", Arguments: json.RawMessage(`{"agent":"coach","task":"plan"}`)}}})
	apply("c1", &events.ToolCalled{RunID: "r1", Step: 1, CallID: "t1", Tool: "delegate", Arguments: json.RawMessage(`{"agent":"coach","task":"plan"}`)})
	rootSeq := root().LastSeq

	apply("d1", &events.ConversationOpened{Agent: "coach", Channel: "delegate", RootID: "c1", RootSource: "web",
		ParentRunID: "r1", ParentConversation: "c1", ParentCallID: "t1", Autonomous: true})
	apply("d1", &events.MessageReceived{Channel: "delegate", From: "master", Text: "plan"})
	apply("d1", &events.RunStarted{RunID: "r2", Agent: "coach", Trigger: "delegate", ParentRunID: "r1"})
	run, err := GetRun(db, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if d := run.Steps[0].ToolCalls[0].Delegate; d == nil || d.Conversation != "d1" || d.Agent != "coach" || d.RunID != "r2" || d.Status != "" || d.Run == nil || d.Run.RunID != "r2" {
		t.Fatalf("delegate call while the child runs = %+v", d)
	}

	apply("d1", &events.ApprovalRequested{ApprovalID: "a1", RunID: "r2", Step: 1, CallID: "k1", Tool: "shell_run", Reason: "matches shell_ask_patterns",
		Arguments: json.RawMessage(`{"command":"rm x"}`), ExpiresAt: exp})
	c := root()
	if c.Status != ConversationAwaitingApproval || len(c.PendingApprovals) != 1 || c.LastSeq != rootSeq {
		t.Fatalf("root while the child asks: %+v", c)
	}
	if a := c.PendingApprovals[0]; a.ID != "a1" || a.Conversation != "d1" || a.Agent != "coach" || a.Tool != "shell_run" || a.Reason == "" {
		t.Errorf("root's pending approval = %+v", a)
	}
	if conv, err := FindApproval(db, "a1"); err != nil || conv != "d1" {
		t.Errorf("FindApproval(a1) = %q, %v; want the child", conv, err)
	}
	apply("d1", &events.ApprovalDecided{ApprovalID: "a1", Decision: events.DecisionApproved})
	if c := root(); c.Status != ConversationRunning || c.PendingApprovals != nil {
		t.Errorf("root after the decision: %+v", c)
	}
	// An approval still pending when the child's run ends leaves the root.
	apply("d1", &events.ApprovalRequested{ApprovalID: "a2", RunID: "r2", Step: 2, CallID: "k2", Tool: "shell_run", Arguments: json.RawMessage(`{}`), ExpiresAt: exp})
	if c := root(); c.Status != ConversationAwaitingApproval {
		t.Errorf("root status = %s", c.Status)
	}
	apply("d1", &events.ModelCalled{RunID: "r2", Step: 1, Route: "a", Model: "m", CostUSD: cost(0.02), Text: "Run easy."})
	apply("d1", &events.RunFinished{RunID: "r2", Status: events.RunDone})
	if c := root(); c.Status != ConversationRunning || c.PendingApprovals != nil {
		t.Errorf("root after the child's run ended: %+v", c)
	}

	apply("c1", &events.ToolCompleted{RunID: "r1", Step: 1, CallID: "t1", Tool: "delegate", Output: "Run easy.",
		Delegate: &events.DelegateResult{Agent: "coach", Conversation: "d1", RunID: "r2", Status: events.RunDone, CostUSD: cost(0.02)}})
	apply("c1", &events.ModelCalled{RunID: "r1", Step: 2, Route: "a", Model: "m", CostUSD: cost(0.01), Text: "The coach says: run easy."})
	apply("c1", &events.RunFinished{RunID: "r1", Status: events.RunDone})

	run, err = GetRun(db, "r1")
	if err != nil {
		t.Fatal(err)
	}
	d := run.Steps[0].ToolCalls[0].Delegate
	if d == nil || d.Status != events.RunDone || d.CostUSD == nil || *d.CostUSD != 0.02 || d.Run == nil || len(d.Run.Steps) != 2 || d.Run.Steps[0].ModelCalls[0].Text != "Run easy." {
		t.Fatalf("delegate call after the answer = %+v", d)
	}
	if math.Abs(run.Totals.CostUSD-0.04) > 1e-9 || run.Totals.DelegatedCostUSD != 0.02 || run.Totals.ToolCalls != 1 {
		t.Errorf("parent totals = %+v, want cost 0.04 with 0.02 delegated", run.Totals)
	}
	if len(run.Children) != 1 || run.Children[0].RunID != "r2" {
		t.Errorf("children = %+v", run.Children)
	}
	list, err := ListRuns(db, "c1")
	if err != nil || len(list) != 1 || len(list[0].Children) != 1 {
		t.Errorf("runs of c1 = %+v, %v", list, err)
	}
}
