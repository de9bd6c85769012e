package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/ui"
)

// R-DEL in the UI: the master's chat pins the delegate's card (running,
// then "<name> answered" with the answer as Markdown, a link to the child,
// status and cost), shows the child's approval bar while it asks, and the
// runs page nests the child run under the delegate step.
func TestDelegatePinnedInMastersChat(t *testing.T) {
	ctx := t.Context()
	h := newHarness(t)
	log, runner := h.log, h.runner
	convs := loop.NewConvs(log, nil)
	pages := h.pages()
	pages.Agents = []ui.AgentRow{{ID: "master", Name: "Assistant"}, {ID: "coach", Name: "Health coach"}}
	url := h.serve(t, web.Config{Pages: pages})

	child := loop.ChildID("c1", "t1")
	appendTo := func(conv string, evs ...events.Event) {
		t.Helper()
		c, err := convs.Get(ctx, conv)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := c.Append(ctx, func(*loop.State) ([]events.Event, error) { return evs, nil })
		if err != nil {
			t.Fatal(err)
		}
		if err := runner.WaitFor(ctx, stored[len(stored)-1].Seq); err != nil {
			t.Fatal(err)
		}
	}
	page := func(path string) string {
		t.Helper()
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s = %d\n%s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	args := json.RawMessage(`{"agent":"coach","task":"Plan tomorrow's run."}`)
	exp := time.Now().Add(10 * time.Minute).UTC()
	appendTo("c1",
		&events.ConversationOpened{Agent: "master", Channel: "web"},
		&events.MessageReceived{Channel: "web", Text: "plan my run"},
		&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"},
		&events.ModelCalled{RunID: "r1", Step: 1, Route: "a", Model: "m", CostUSD: cost(0.01),
			ToolCalls: []events.ToolCallRequest{{ID: "t1", Name: loop.DelegateTool, Arguments: args}}},
		&events.ToolCalled{RunID: "r1", Step: 1, CallID: "t1", Tool: loop.DelegateTool, Arguments: args})
	appendTo(child,
		&events.ConversationOpened{Agent: "coach", Channel: "delegate", RootID: "c1", RootSource: "web",
			ParentRunID: "r1", ParentConversation: "c1", ParentCallID: "t1", Autonomous: true},
		&events.MessageReceived{Channel: "delegate", From: "master", Text: "Plan tomorrow's run."},
		&events.RunStarted{RunID: "r2", Agent: "coach", Trigger: "delegate", ParentRunID: "r1"},
		&events.ModelCalled{RunID: "r2", Step: 1, Route: "a", Model: "m", CostUSD: cost(0.02),
			ToolCalls: []events.ToolCallRequest{{ID: "k1", Name: "shell_run", Arguments: json.RawMessage(`{"command":"rm -rf old"}`)}}},
		&events.ApprovalRequested{ApprovalID: "a1", RunID: "r2", Step: 1, CallID: "k1", Tool: "shell_run",
			Arguments: json.RawMessage(`{"command":"rm -rf old"}`), Reason: "matches shell_ask_patterns", ExpiresAt: exp})

	chat := page("/c/c1")
	for _, want := range []string{
		`data-testid="delegate-card"`, `data-child-conversation="` + child + `"`, "Health coach is working on it",
		`data-testid="approval-bar" data-approval-id="a1"`, `data-testid="approval-from"`, "Asked by Health coach",
		`href="/c/` + child + `"`, `data-status="awaiting_approval"`,
	} {
		if !strings.Contains(chat, want) {
			t.Errorf("chat while the child asks lacks %s", want)
		}
	}

	appendTo(child,
		&events.ApprovalDecided{ApprovalID: "a1", Decision: events.DecisionApproved},
		&events.ToolCalled{RunID: "r2", Step: 1, CallID: "k1", Tool: "shell_run"},
		&events.ToolCompleted{RunID: "r2", Step: 1, CallID: "k1", Tool: "shell_run", Output: "ok"},
		&events.ModelCalled{RunID: "r2", Step: 2, Route: "a", Model: "m", CostUSD: cost(0), Text: "Run **easy**, 40 minutes."},
		&events.RunFinished{RunID: "r2", Status: events.RunDone})
	appendTo("c1",
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "t1", Tool: loop.DelegateTool, Output: "Run **easy**, 40 minutes.",
			Delegate: &events.DelegateResult{Agent: "coach", Conversation: child, RunID: "r2", Status: events.RunDone, CostUSD: cost(0.02)}},
		&events.ModelCalled{RunID: "r1", Step: 2, Route: "a", Model: "m", CostUSD: cost(0.01), Text: "The coach says: run easy."},
		&events.RunFinished{RunID: "r1", Status: events.RunDone})

	chat = page("/c/c1")
	for _, want := range []string{
		"Health coach answered", `data-testid="delegate-answer"`, "<strong>easy</strong>", `data-testid="delegate-cost">$0.0200`,
		`data-testid="delegate-status">done`, `href="/c/` + child + `"`,
	} {
		if !strings.Contains(chat, want) {
			t.Errorf("chat after the answer lacks %s", want)
		}
	}
	if strings.Contains(chat, `data-testid="approval-bar"`) || strings.Contains(chat, `data-testid="tool-card" data-call-id="t1"`) {
		t.Errorf("chat after the answer still shows the approval bar or the delegate as a plain tool card")
	}

	runs := page("/c/c1/runs")
	step := runs[strings.Index(runs, `data-call-id="t1"`):]
	if i := strings.Index(step, `data-testid="delegate-run"`); i < 0 || !strings.Contains(step[i:], `data-run-id="r2"`) {
		t.Errorf("runs page does not nest r2 under the delegate call:\n%s", runs)
	}
	if strings.Count(runs, `data-run-id="r2"`) != 1 {
		t.Errorf("child run shown %d times", strings.Count(runs, `data-run-id="r2"`))
	}
	if !strings.Contains(runs, "$0.0400 ($0.0200 by delegates)") {
		t.Errorf("parent run's cost does not include the child's")
	}
}

func cost(v float64) *float64 { return &v }
