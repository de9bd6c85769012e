package loop_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/memlog"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools/fence"
)

// richConversation is one conversation's events touching every fold of
// the state: a delegated teammate's conversation, turn and canvas notes, a
// tool_search load, untrusted content, a script's nested calls, an
// "always" approval, a question, a background task, a canvas write, costs,
// a finished run, then a second run the owner stopped while a message
// waits.
func richConversation() []events.Event {
	usd := func(v float64) *float64 { return &v }
	capUSD := 0.5
	args := json.RawMessage(`{"path":"x"}`)
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	return []events.Event{
		&events.ConversationOpened{Agent: "master", Channel: "delegate", RootID: "root1", RootSource: "web", ParentConversation: "parent1",
			ParentCallID: "pcall", ParentRunID: "prun", CostCapUSD: &capUSD, Team: "team1", Member: "alice"},
		&events.MessageReceived{Channel: "web", Text: "first", ExternalID: "telegram:1",
			TurnNotes:   &events.TurnNotes{Text: "notes", Told: []events.NoteTold{{Key: "memory/a.md", Len: 3, Digest: "abc"}}},
			CanvasNotes: &events.CanvasNotes{Text: "canvas", Told: []events.CanvasTold{{Artifact: "a1", Version: 2, Whole: true}}}},
		&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"},
		&events.ModelCalled{RunID: "r1", Step: 1, Route: "fake:a", Model: "a", CostUSD: usd(0.01), InputTokens: 100, EstimatedTokens: 80,
			ToolCalls: []events.ToolCallRequest{{ID: "c1", Name: "tool_search", Arguments: args}, {ID: "c2", Name: "tool_script", Arguments: args},
				{ID: "c3", Name: "workspace_write", Arguments: args}, {ID: "c4", Name: "ask_user", Arguments: args}, {ID: "c5", Name: "delegate", Arguments: args}}},
		&events.ToolCalled{RunID: "r1", Step: 1, CallID: "c1", Tool: "tool_search", Arguments: args},
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "c1", Tool: "tool_search", Output: "found " + fence.Marker, Meta: map[string]any{"loaded": []any{"mcp__x__echo"}}},
		&events.ToolCalled{RunID: "r1", Step: 1, CallID: "c2", Tool: "tool_script", Arguments: args},
		&events.NestedCall{RunID: "r1", Step: 1, CallID: "c2", N: 2, Kind: "tool", Tool: "artifact_edit", Chars: 4,
			Canvas: &events.CanvasRef{Artifact: "a1", Version: 3, Op: events.OpEdit, Whole: true}},
		&events.NestedCall{RunID: "r1", Step: 1, CallID: "c2", N: 1, Kind: "tool", Tool: "workspace_read", Chars: 2, Untrusted: true},
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "c2", Tool: "tool_script", Output: "printed"},
		&events.ApprovalRequested{ApprovalID: "ap1", RunID: "r1", Step: 1, CallID: "c3", Tool: "workspace_write", Arguments: args, Reason: "writes", ExpiresAt: at},
		&events.ApprovalDecided{ApprovalID: "ap1", Decision: events.DecisionApproved, Always: true, Channel: "web"},
		&events.ToolCalled{RunID: "r1", Step: 1, CallID: "c3", Tool: "workspace_write", Arguments: args},
		&events.TaskStarted{TaskID: "bg-1", CallID: "c3", FromRun: "r1", Command: "sleep 1"},
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "c3", Tool: "workspace_write", Output: "wrote",
			Canvas: &events.CanvasRef{Artifact: "a2", Version: 1, Op: events.OpCreate, Whole: true}},
		&events.QuestionAsked{QuestionID: "q1", RunID: "r1", Step: 1, CallID: "c4", Question: "which?", Choices: []string{"a", "b"}, ExpiresAt: at},
		&events.QuestionAnswered{QuestionID: "q1", Answer: "a", Channel: "web"},
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "c4", Tool: "ask_user", Output: "a"},
		&events.ToolCalled{RunID: "r1", Step: 1, CallID: "c5", Tool: "delegate", Arguments: args},
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "c5", Tool: "delegate", Output: "child said",
			Delegate: &events.DelegateResult{Agent: "coder", Conversation: "child1", Status: "done", CostUSD: usd(0.02)}},
		&events.ModelCalled{RunID: "r1", Step: 2, Route: "fake:a", Model: "a", Text: "all done"},
		&events.RunFinished{RunID: "r1", Status: events.RunDone},
		&events.MessageReceived{Channel: "web", Text: "second"},
		&events.RunStarted{RunID: "r2", Agent: "master", Trigger: "message"},
		&events.MessageReceived{Channel: "web", Text: "waiting"},
		&events.RunStopRequested{RunID: "r2", By: events.StopByWeb, Scope: events.StopAll},
	}
}

// richLog is a log holding richConversation on conversation "c", with
// fixed ids and times.
func richLog(t *testing.T) *memlog.MemLog {
	t.Helper()
	log := memlog.New(nil)
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	for i, e := range richConversation() {
		env := events.MustNew(e)
		env.ID, env.Time = fmt.Sprintf("ev%02d", i), at.Add(time.Duration(i)*time.Second)
		log.Put(events.Conv("c"), env)
	}
	return log
}

// Issue 33 item 1: a snapshot of the previous version (25, the flat state
// before folds; testdata/snapshot-v25.gob, written by that build from
// richConversation) is never misread: it is discarded, the load says so,
// and the state rebuilt from the log equals a cold replay's — which holds
// what every fold folded — and is saved in this version.
func TestSnapshotOfThePreviousVersionIsRebuiltFromTheLog(t *testing.T) {
	old, err := os.ReadFile("testdata/snapshot-v25.gob")
	if err != nil {
		t.Fatal(err)
	}
	if old[0] != 25 {
		t.Fatalf("the fixture is version %d", old[0])
	}
	log := richLog(t)
	cold, err := loop.LoadState(t.Context(), log, nil, "c")
	if err != nil {
		t.Fatal(err)
	}
	snaps := &memSnapshots{data: map[string][]byte{"c": old}}
	var said bytes.Buffer
	convs := loop.NewConvsFrom(loop.ConvsConfig{Log: log, Snapshots: snaps, Logger: slog.New(slog.NewTextHandler(&said, nil))})
	c, err := convs.Get(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	var warm loop.State
	c.View(func(st *loop.State) { warm = *st })
	if !reflect.DeepEqual(&warm, cold) {
		t.Fatalf("the state loaded beside an old snapshot differs from a cold replay:\n%+v\n%+v", warm, *cold)
	}
	if !strings.Contains(said.String(), "snapshot discarded: the state is rebuilt from the log") || !strings.Contains(said.String(), "conversation=c") ||
		!strings.Contains(said.String(), "[25]") {
		t.Fatalf("the load did not say it discarded the version 25 snapshot: %q", said.String())
	}
	if snaps.saves != 1 || snaps.data["c"][0] == 25 {
		t.Fatalf("the rebuilt state was not saved in this version (saves %d)", snaps.saves)
	}
	// Every fold holds its part (a snapshot misread in part would lose one).
	if cold.RootID != "root1" || cold.Member != "alice" || cold.Loaded[0] != "mcp__x__echo" || cold.NestedCalls != 2 || cold.AutoApprove[0] != "workspace_write" ||
		cold.CostUSD < 0.0299 || cold.Told["memory/a.md"].Digest != "abc" || cold.Canvas["a1"].Seen != 3 || cold.Tasks["bg-1"] == nil ||
		cold.Stop == nil || cold.Stop.RunID != "r2" || cold.TokenRatio["fake:a"] != 1.25 || cold.External["telegram:1"] != "ev01" ||
		cold.DelegateEnd == nil || cold.LastEnd == nil || cold.DelegateEnd.Text != "all done" || len(cold.Queued) != 1 || cold.OpenRun != "r2" {
		t.Fatalf("the rebuilt state lost a fold's part: %+v", *cold)
	}
}

// State keeps what every turn needs in at most 25 fields, each feature's
// part a fold; State.Apply only dispatches (at most 80 lines).
func TestStateFieldsAndApplyStaySmall(t *testing.T) {
	if n := reflect.TypeFor[loop.State]().NumField(); n > 25 {
		t.Errorf("loop.State has %d fields; at most 25: put a feature's part in a fold of its own (loop/fold.go)", n)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "state.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "Apply" && fn.Recv != nil {
			found = true
			if lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; lines > 80 {
				t.Errorf("State.Apply is %d lines; at most 80: it dispatches to the folds", lines)
			}
		}
	}
	if !found {
		t.Error("no State.Apply in state.go")
	}
}
