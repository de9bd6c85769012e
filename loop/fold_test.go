package loop

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools/fence"
)

// Each fold of State has a test of its own (issue 33 item 1): its apply
// alone, fed events with what it reads of the rest (foldOn).

func ev(e events.Event) events.Envelope { return events.MustNew(e).Decoded() }

func feed(f fold, on foldOn, evs ...events.Event) {
	for _, e := range evs {
		f.apply(ev(e), on)
	}
}

func wantFold[T any](t *testing.T, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("fold = %s\nwant   %s", g, w)
	}
}

var (
	open = foldOn{open: "r1"}
	cost = func(v float64) *float64 { return &v }
)

func TestFoldDelegation(t *testing.T) {
	var f Delegation
	capUSD := 0.5
	end := &RunEnd{Status: events.RunDone, Text: "done"}
	feed(&f, open, &events.ConversationOpened{RootID: "root", RootSource: "web", ParentConversation: "p", ParentCallID: "pc", ParentRunID: "pr", CostCapUSD: &capUSD},
		&events.RunStarted{RunID: "r1"}, &events.ToolCalled{RunID: "r1", CallID: "c1", Tool: DelegateTool},
		&events.NestedCall{RunID: "r1", CallID: "c2", Delegate: &events.DelegateResult{Agent: "a"}}, &events.ToolCalled{RunID: "r1", CallID: "c3", Tool: "workspace_read"})
	feed(&f, foldOn{open: "r1", end: end}, &events.RunFinished{RunID: "r1", Status: events.RunDone})
	feed(&f, foldOn{open: "r2", end: &RunEnd{Status: events.RunFailed}}, &events.RunStarted{RunID: "r2"}, &events.RunFinished{RunID: "r2", Status: events.RunFailed})
	wantFold(t, f, Delegation{RootID: "root", RootSource: "web", ParentConversation: "p", ParentCallID: "pc", ParentRunID: "pr", CostCap: &capUSD,
		Delegations: 2, DelegateRun: "r1", DelegateEnd: end})
	if f.Budget(1) != 0.5 || f.Budget(0.2) != 0.2 || f.Budget(0) != 0.5 {
		t.Errorf("budget: the smaller of the agent's and the child's cap, got %v %v %v", f.Budget(1), f.Budget(0.2), f.Budget(0))
	}
}

func TestFoldCanvasMarks(t *testing.T) {
	var f CanvasMarks
	feed(&f, open, &events.MessageReceived{CanvasNotes: &events.CanvasNotes{Told: []events.CanvasTold{{Artifact: "a1", Version: 2}}}},
		&events.ToolCompleted{RunID: "r1", CallID: "c1", Canvas: &events.CanvasRef{Artifact: "a2", Version: 1, Op: events.OpCreate, Whole: true}},
		&events.NestedCall{RunID: "r1", CallID: "c2", Canvas: &events.CanvasRef{Artifact: "a1", Version: 3, Op: events.OpEdit, Whole: true}},
		&events.ToolCompleted{RunID: "r0", CallID: "c3", Canvas: &events.CanvasRef{Artifact: "a1", Version: 4, Op: events.OpEdit}}, // not the open run's: no write counted
		&events.ToolCompleted{RunID: "r1", CallID: "c4", IsError: true, Canvas: &events.CanvasRef{Artifact: "a3", Version: 1, Op: events.OpCreate}})
	wantFold(t, f, CanvasMarks{Canvas: map[string]CanvasMark{"a1": {Seen: 3, Told: 4}, "a2": {Seen: 1, Told: 1}, "a3": {Told: 1}},
		RunCanvas: RunCanvas{Created: 1, Writes: map[string]int{"a1": 1}}})
	if got := f.CanvasSeen(); !reflect.DeepEqual(got, map[string]int{"a1": 3, "a2": 1}) {
		t.Errorf("seen = %v", got)
	}
	feed(&f, open, &events.RunStarted{RunID: "r2"})
	if f.RunCanvas.Created != 0 || f.RunCanvas.Writes != nil || f.Canvas["a1"].Seen != 3 {
		t.Errorf("a new run counts its writes afresh and keeps the marks: %+v", f)
	}
}

func TestFoldTeamSeat(t *testing.T) {
	var f TeamSeat
	end := &RunEnd{Status: events.RunDone, Text: "report"}
	feed(&f, open, &events.ConversationOpened{Team: "t1", Member: "alice"},
		&events.MessageReceived{Team: &events.TeamDelivery{Through: 7, Assigned: "task_1"}},
		&events.SteerReceived{Team: &events.TeamDelivery{Through: 5}}, &events.SteerReceived{Team: &events.TeamDelivery{Through: 9}})
	feed(&f, foldOn{open: "r1", end: end}, &events.RunFinished{RunID: "r1", Status: events.RunDone})
	feed(&f, foldOn{open: "r2"}, &events.RunFinished{RunID: "r1", Status: events.RunFailed}) // not the open run's
	wantFold(t, f, TeamSeat{Team: "t1", Member: "alice", MailSeen: 9, Assigned: "task_1", LastRun: "r1", LastEnd: end})
}

func TestFoldMCPLoaded(t *testing.T) {
	var f MCPLoaded
	feed(&f, open, &events.ToolCompleted{Tool: ToolSearchTool, CallID: "c1", Meta: map[string]any{"loaded": []any{"mcp__a__x", "mcp__a__y"}}},
		&events.ToolCompleted{Tool: "workspace_read", CallID: "c2", Meta: map[string]any{"loaded": []any{"not_mcp"}}},
		&events.ToolCompleted{Tool: ToolSearchTool, CallID: "c3", Meta: map[string]any{"loaded": []any{"mcp__a__y", "mcp__b__z"}}})
	wantFold(t, f, MCPLoaded{Loaded: []string{"mcp__a__x", "mcp__a__y", "mcp__b__z"}})
}

func TestFoldScripting(t *testing.T) {
	var f Scripting
	feed(&f, open, &events.NestedCall{RunID: "r1", CallID: "s1", N: 2, Tool: "b"}, &events.NestedCall{RunID: "r1", CallID: "s1", N: 1, Tool: "a"},
		&events.NestedCall{RunID: "r0", CallID: "s0", N: 1, Tool: "old"})
	if f.NestedCalls != 2 || len(f.Nesting["s1"]) != 2 || f.Nesting["s1"][0].Tool != "a" || f.Nesting["s0"] != nil {
		t.Fatalf("the open run's nested calls, in the script's order: %+v", f)
	}
	feed(&f, open, &events.ToolCompleted{RunID: "r1", CallID: "s1", Tool: ToolScriptTool})
	wantFold(t, f, Scripting{NestedCalls: 2, Nesting: map[string][]events.NestedCall{}})
}

func TestFoldOwnerAsks(t *testing.T) {
	var f OwnerAsks
	feed(&f, open, &events.ApprovalRequested{ApprovalID: "ap1", RunID: "r1", CallID: "c1", Tool: "workspace_write"},
		&events.ApprovalDecided{ApprovalID: "ap1", Decision: events.DecisionApproved, Always: true},
		&events.QuestionAsked{QuestionID: "q1", RunID: "r1", CallID: "c2", Question: "which?"},
		&events.QuestionAnswered{QuestionID: "q1", Answer: "a", Channel: "web"},
		&events.QuestionExpired{QuestionID: "q1"}) // the first outcome wins
	if a := f.ApprovalByID("ap1"); a == nil || a.Decision != events.DecisionApproved || f.PendingApproval() != nil {
		t.Fatalf("approval = %+v", a)
	}
	if q := f.QuestionByID("q1"); q == nil || q.Outcome != QuestionAnswered || q.Answer != "a" || f.PendingQuestion() != nil {
		t.Fatalf("question = %+v", q)
	}
	feed(&f, open, &events.ToolCompleted{RunID: "r1", CallID: "c1"}, &events.ToolCompleted{RunID: "r1", CallID: "c2"},
		&events.ApprovalRequested{ApprovalID: "ap2", RunID: "r1", CallID: "c3", Tool: "shell_run"})
	if f.PendingApproval() == nil || f.PendingApproval().ID != "ap2" {
		t.Fatalf("pending = %+v", f.PendingApproval())
	}
	feed(&f, foldOn{open: "r1", end: &RunEnd{}}, &events.RunFinished{RunID: "r1"})
	wantFold(t, f, OwnerAsks{AutoApprove: []string{"workspace_write"}, Decided: map[string]string{"ap1": events.DecisionApproved}, Asked: map[string]string{"q1": QuestionAnswered}})
}

func TestFoldSpend(t *testing.T) {
	var f Spend
	feed(&f, open, &events.ModelCalled{RunID: "r1", Step: 1, CostUSD: cost(0.01)}, &events.ModelCalled{RunID: "r1", Step: 2},
		&events.ModelCalled{RunID: "r1", Step: 3, Error: "503"}, // a failed call costs nothing known, and is no unknown cost
		&events.ModelRetried{RunID: "r1", CostUSD: cost(0.001)}, &events.ModelRetried{RunID: "r1", OutputTokens: 3},
		&events.ModelCalled{Purpose: events.PurposeCompaction, CostUSD: cost(0.002)},
		&events.ToolCompleted{CallID: "c1", Delegate: &events.DelegateResult{CostUSD: cost(0.02)}},
		&events.NestedCall{CallID: "c2", Delegate: &events.DelegateResult{CostUSD: nil, UnknownCostCalls: 2}})
	if f.UnknownCostCalls != 4 || f.CostUSD < 0.0329 || f.CostUSD > 0.0331 {
		t.Fatalf("spend = %+v, want 0.033 known and 4 unknown", f)
	}
}

func TestFoldForkPin(t *testing.T) {
	f := ForkPin{Route: "fake:b", Pin: &SystemPin{RunID: "r1", Step: 2, System: "sys"}}
	feed(&f, open, &events.ModelCalled{RunID: "r1", Step: 1}, &events.ModelCalled{RunID: "r1", Step: 2, Error: "503"},
		&events.ModelCalled{RunID: "r1", Step: 2, Purpose: events.PurposeCompaction})
	if f.Pin == nil {
		t.Fatal("the pin went before its step was answered")
	}
	feed(&f, open, &events.ModelCalled{RunID: "r1", Step: 2})
	wantFold(t, f, ForkPin{Route: "fake:b"})
}

func TestFoldUntrusted(t *testing.T) {
	var f Untrusted
	feed(&f, open, &events.ToolCompleted{RunID: "r1", CallID: "c1", Tool: "workspace_read", Output: "plain"},
		&events.ToolCompleted{RunID: "r0", CallID: "c2", Tool: "fetch_url", Output: fence.Marker}) // not the open run's
	if f.RunUntrusted != "" {
		t.Fatalf("marked by %q", f.RunUntrusted)
	}
	feed(&f, open, &events.NestedCall{RunID: "r1", CallID: "c3", Tool: "web_search", Untrusted: true},
		&events.ToolCompleted{RunID: "r1", CallID: "c4", Tool: "fetch_url", Output: fence.Marker})
	wantFold(t, f, Untrusted{RunUntrusted: "web_search (in a script)"}) // the first read counts
	feed(&f, foldOn{queuedTeam: true}, &events.RunStarted{RunID: "r2"})
	wantFold(t, f, Untrusted{RunUntrusted: teamMessage})
	feed(&f, foldOn{}, &events.RunStarted{RunID: "r3"})
	steers := []Pending{{EventID: "s1", Team: true}, {EventID: "s2"}}
	feed(&f, foldOn{open: "r3", steers: steers}, &events.SteersApplied{SteerIDs: []string{"s1"}, Withheld: true})
	wantFold(t, f, Untrusted{}) // withheld: never read
	feed(&f, foldOn{open: "r3", steers: steers}, &events.SteersApplied{SteerIDs: []string{"s1"}})
	wantFold(t, f, Untrusted{RunUntrusted: teamMessage})
}

func TestFoldNotesTold(t *testing.T) {
	var f NotesTold
	feed(&f, open, &events.MessageReceived{TurnNotes: &events.TurnNotes{Told: []events.NoteTold{{Key: "memory/a.md", Len: 1, Digest: "x"}}}},
		&events.SteerReceived{TurnNotes: &events.TurnNotes{Told: []events.NoteTold{{Key: "memory/a.md", Len: 2, Digest: "y"}, {Key: "summary:web", Len: 3, Digest: "z"}}}})
	wantFold(t, f, NotesTold{Told: map[string]events.NoteTold{"memory/a.md": {Key: "memory/a.md", Len: 2, Digest: "y"}, "summary:web": {Key: "summary:web", Len: 3, Digest: "z"}}})
}

func TestFoldBackgroundTasks(t *testing.T) {
	var f BackgroundTasks
	feed(&f, open, &events.TaskStarted{TaskID: "bg-1", CallID: "c1", FromRun: "r1", Command: "sleep 9"}, &events.TaskStarted{TaskID: "bg-2", Command: "true"},
		&events.TaskStarted{TaskID: "bg-3", Command: "sleep 9"},
		&events.TaskStopRequested{TaskID: "bg-1", By: events.StopByWeb}, &events.RunStopRequested{Tasks: []string{"bg-1", "bg-3"}, By: events.StopByAPI},
		&events.TaskNotification{TaskID: "bg-2", ExitCode: 0})
	if got := f.RunningTasks(); !reflect.DeepEqual(got, []string{"bg-1", "bg-3"}) {
		t.Fatalf("running = %v", got)
	}
	if f.Tasks["bg-1"].StopBy != events.StopByWeb || f.Tasks["bg-3"].StopBy != events.StopByAPI || f.Tasks["bg-1"].State() != TaskStopping || f.Tasks["bg-2"].State() != TaskExited {
		t.Fatalf("tasks = %+v %+v %+v", *f.Tasks["bg-1"], *f.Tasks["bg-2"], *f.Tasks["bg-3"])
	}
}

func TestFoldStopping(t *testing.T) {
	var f Stopping
	feed(&f, open, &events.RunStopRequested{RunID: "r0", By: events.StopByWeb}) // not the open run
	if f.Stop != nil {
		t.Fatal("a stop of another run")
	}
	feed(&f, open, &events.RunStopRequested{RunID: "r1", By: events.StopByTelegram, Scope: events.StopAll},
		&events.RunStopRequested{RunID: "r1", By: events.StopByWeb})
	if f.Stop == nil || f.Stop.By != events.StopByTelegram || f.Stop.RunID != "r1" {
		t.Fatalf("stop = %+v, want the first", f.Stop)
	}
	feed(&f, foldOn{open: "r1", end: &RunEnd{}}, &events.RunFinished{RunID: "r1"})
	wantFold(t, f, Stopping{})
}

func TestFoldGuarding(t *testing.T) {
	var f Guarding
	same := []events.ToolCallRequest{{ID: "x", Name: "workspace_list", Arguments: json.RawMessage(`{"path":"."}`)}}
	feed(&f, open, &events.ModelCalled{RunID: "r1", Step: 1, ToolCalls: same}, &events.ModelCalled{RunID: "r1", Step: 2, ToolCalls: same},
		&events.ModelCalled{RunID: "r0", Step: 3, ToolCalls: same}, &events.ModelCalled{RunID: "r1", Step: 3, ToolCalls: same, Error: "503"})
	if f.Guard.Repeats != 2 {
		t.Fatalf("repeats = %d, want the open run's two answered replies", f.Guard.Repeats)
	}
	feed(&f, open, &events.GuardReminded{RunID: "r1"})
	if !f.Guard.Reminded {
		t.Fatal("the reminder is not marked")
	}
	feed(&f, open, &events.Escalated{RunID: "r1", Reason: "loop"})
	if !f.Escalated || f.Guard.Repeats != 0 {
		t.Fatalf("after the reminder and a loop escalation: %+v", f)
	}
	feed(&f, open, &events.ModelCalled{RunID: "r1", Step: 4, ToolCalls: same})
	feed(&f, foldOn{open: "r1", steers: []Pending{{EventID: "s1", Team: true}}}, &events.SteersApplied{SteerIDs: []string{"s1"}})
	if f.Guard.Repeats == 0 {
		t.Fatal("a team message reset the count: only the owner's words do")
	}
	feed(&f, foldOn{open: "r1", steers: []Pending{{EventID: "s2"}}}, &events.SteersApplied{SteerIDs: []string{"s2"}})
	if f.Guard.Repeats != 0 {
		t.Fatal("the owner's steer did not reset the count")
	}
	feed(&f, open, &events.RunStarted{RunID: "r2"})
	wantFold(t, f, Guarding{})
}

func TestFoldCompacting(t *testing.T) {
	var f Compacting
	feed(&f, open, &events.ModelCalled{RunID: "r1", Step: 1, Route: "fake:a", InputTokens: 150, EstimatedTokens: 100},
		&events.ModelCalled{Purpose: events.PurposeCompaction, Route: "fake:b", InputTokens: 10, EstimatedTokens: 100},
		&events.ContextCompacted{RunID: "r1", Step: 2, Stage: "micro", Results: []events.CompactedResult{{CallID: "c1"}}})
	if !reflect.DeepEqual(f.TokenRatio, map[string]float64{"fake:a": 1.5}) || len(f.Compaction.Results) != 1 {
		t.Fatalf("compacting = %+v", f)
	}
}

func TestFoldShownReplies(t *testing.T) {
	var f ShownReplies
	on := foldOn{open: "r1", messages: 4}
	feed(&f, on, &events.ModelCalled{RunID: "r1", Step: 1, Text: "half", Error: "broke"},
		&events.ModelCalled{RunID: "r1", Step: 1, Text: "cut", Error: ErrStopped.Error(), Stopped: true}, // a stopped reply is a message
		&events.ModelRetried{RunID: "r1", Route: "fake:a", Attempt: 2, Text: "again", Interrupted: true},
		&events.RouteFallback{RunID: "r1", From: "fake:a", To: "fake:b", Error: "503", Text: "moved", Interrupted: true},
		&events.ModelRetried{RunID: "r1", Text: "not shown"})
	wantFold(t, f, ShownReplies{Shown: []ShownText{{At: 4, RunID: "r1", Text: "half", Then: "the model call failed: broke"},
		{At: 4, RunID: "r1", Text: "again", Then: "retried on fake:a (attempt 2)"},
		{At: 4, RunID: "r1", Text: "moved", Then: "moved from fake:a to fake:b after: 503"}}})
}
