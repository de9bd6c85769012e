package web_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
)

// pagesSite serves the pages over a real log and projections; appendTo
// stores events in a conversation and waits until they are projected.
func pagesSite(t *testing.T, home string) (page func(path string) string, appendTo func(conv string, evs ...events.Event)) {
	t.Helper()
	h := newHarness(t)
	pages := h.pages()
	pages.Home = home
	url := h.serve(t, web.Config{Pages: pages})
	appendTo = func(conv string, evs ...events.Event) {
		t.Helper()
		h.add(t, conv, evs...)
	}
	return func(path string) string { t.Helper(); return getBody(t, url+path) }, appendTo
}

// toolStatus is the status word of the tool card of call id in html.
func toolStatus(t *testing.T, html, id string) string {
	t.Helper()
	i := strings.Index(html, `data-call-id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no tool card for %s", id)
		return ""
	}
	m := regexp.MustCompile(`data-testid="tool-status">([^<]*)<`).FindStringSubmatch(html[i:])
	if m == nil {
		t.Fatalf("tool card %s has no status", id)
	}
	return m[1]
}

// TestDeniedAndExpiredLabelledInChatAndRuns (issue 10 item 10): a call
// waiting for its approval says so; denied and expired calls are labelled
// denied and expired, in the chat and on the runs page; the approval card
// shows the command as text, its > and line break real.
func TestDeniedAndExpiredLabelledInChatAndRuns(t *testing.T) {
	page, appendTo := pagesSite(t, "/crew")
	cmd := json.RawMessage(`{"command":"echo hi \u003e out.txt\ncat out.txt"}`)
	other := json.RawMessage(`{"command":"ls"}`)
	exp := time.Now().Add(10 * time.Minute).UTC()
	appendTo("c1",
		&events.ConversationOpened{Agent: "master", Channel: "web"},
		&events.MessageReceived{Channel: "web", Text: "make a file"},
		&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"},
		&events.ModelCalled{RunID: "r1", Step: 1, Route: "a", Model: "m", CostUSD: cost(0.01),
			ToolCalls: []events.ToolCallRequest{{ID: "k1", Name: "shell_run", Arguments: cmd}, {ID: "k2", Name: "shell_run", Arguments: other}}},
		&events.ApprovalRequested{ApprovalID: "a1", RunID: "r1", Step: 1, CallID: "k1", Tool: "shell_run", Arguments: cmd, ExpiresAt: exp})

	chat := page("/c/c1")
	if got := toolStatus(t, chat, "k1"); got != "waiting for your approval" {
		t.Errorf("the call waiting for approval says %q", got)
	}
	bar := chat[strings.Index(chat, `data-testid="approval-bar"`):]
	if !strings.Contains(bar, `data-arg="command"`) || !strings.Contains(bar, "echo hi &gt; out.txt\ncat out.txt</code>") {
		t.Errorf("the approval card does not show the command as text:\n%s", bar)
	}
	for _, bad := range []string{`\u003e`, `\n`, `&amp;gt;`} {
		if strings.Contains(bar, bad) {
			t.Errorf("the approval card holds %q", bad)
		}
	}

	appendTo("c1",
		&events.ApprovalDecided{ApprovalID: "a1", Decision: events.DecisionDenied},
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "k1", Tool: "shell_run", Output: "DENIED_TOOL: the owner denied this call.", IsError: true, Outcome: "denied"},
		&events.ApprovalRequested{ApprovalID: "a2", RunID: "r1", Step: 1, CallID: "k2", Tool: "shell_run", Arguments: other, ExpiresAt: exp},
		&events.ApprovalDecided{ApprovalID: "a2", Decision: events.DecisionExpired},
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "k2", Tool: "shell_run", Output: "DENIED_TOOL: nobody approved this call.", IsError: true, Outcome: "expired"},
		&events.ModelCalled{RunID: "r1", Step: 2, Route: "a", Model: "m", CostUSD: cost(0.01), Text: "Nothing was run."},
		&events.RunFinished{RunID: "r1", Status: events.RunDone})
	chat, runs := page("/c/c1"), page("/c/c1/runs")
	for name, html := range map[string]string{"chat": chat, "runs": runs} {
		if got := toolStatus(t, html, "k1"); got != "denied" {
			t.Errorf("%s: the denied call says %q", name, got)
		}
		if got := toolStatus(t, html, "k2"); got != "expired" {
			t.Errorf("%s: the expired call says %q", name, got)
		}
		if strings.Count(html, "tool tool-denied") != 2 {
			t.Errorf("%s: denied and expired calls are not styled as such", name)
		}
	}
	for _, want := range []string{"approval for shell_run: denied", "approval for shell_run: expired"} {
		if !strings.Contains(runs, want) {
			t.Errorf("runs page lacks %q", want)
		}
	}
	if strings.Contains(chat, `data-testid="run-ending"`) {
		t.Errorf("a run that answered shows an ending notice")
	}
}

// TestFailedAndSilentRunsShownInChat (issue 10 item 8): a failed run's
// plain sentence and spend, a halted one's, and a run that wrote nothing
// are told in the chat, with the pill, until the next message.
func TestFailedAndSilentRunsShownInChat(t *testing.T) {
	page, appendTo := pagesSite(t, "/crew")
	ending := regexp.MustCompile(`data-testid="run-ending-text">([^<]*)<`)
	pill := regexp.MustCompile(`data-testid="conv-status" data-status="([a-z_]*)"`)
	check := func(what, wantText, wantStatus string) {
		t.Helper()
		chat := page("/c/c1")
		m := ending.FindStringSubmatch(chat)
		switch {
		case wantText == "" && m != nil:
			t.Errorf("%s: notice %q, want none", what, m[1])
		case wantText != "" && (m == nil || m[1] != wantText):
			t.Errorf("%s: notice %v, want %q", what, m, wantText)
		}
		if p := pill.FindStringSubmatch(chat); p == nil || p[1] != wantStatus {
			t.Errorf("%s: pill %v, want %q", what, p, wantStatus)
		}
	}
	appendTo("c1",
		&events.ConversationOpened{Agent: "master", Channel: "web"},
		&events.MessageReceived{Channel: "web", Text: "hi"},
		&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"},
		&events.ModelCalled{RunID: "r1", Step: 1, Route: "openrouter:x", Model: "x", Error: "openrouter: permanent model error: HTTP 401: No auth credentials found"},
		&events.RunFinished{RunID: "r1", Status: events.RunFailed, Reason: "model_error", Error: "openrouter: permanent model error: HTTP 401: No auth credentials found"})
	check("failed", "Every model route failed: 401 from openrouter — check OPENROUTER_API_KEY in /crew/env.", "failed")
	if chat := page("/c/c1"); !strings.Contains(chat, `data-testid="run-ending-spend">Spend: $0.0000.`) {
		t.Errorf("the failed run's spend is not shown")
	}

	appendTo("c1", &events.MessageReceived{Channel: "web", Text: "again"})
	check("after the next message", "", "idle")

	appendTo("c1",
		&events.RunStarted{RunID: "r2", Agent: "master", Trigger: "message"},
		&events.ModelCalled{RunID: "r2", Step: 1, Route: "a", Model: "m", CostUSD: cost(0.003)},
		&events.RunFinished{RunID: "r2", Status: events.RunDone})
	check("no text", "The agent finished without writing a reply — send a message to ask again.", "idle")

	appendTo("c1",
		&events.MessageReceived{Channel: "web", Text: "go"},
		&events.RunStarted{RunID: "r3", Agent: "master", Trigger: "message"},
		&events.ModelCalled{RunID: "r3", Step: 1, Route: "a", Model: "m", CostUSD: cost(0.002), Text: "working"},
		&events.RunFinished{RunID: "r3", Status: events.RunHalted, Reason: "loop"})
	check("halted", "Stopped: the agent kept repeating the same tool call (loop guard) — send a message to carry on, saying what to do differently.", "halted")

	// The runs page tells the same for each run that did not end done.
	runs := page("/c/c1/runs")
	for _, want := range []string{
		`data-testid="run-notice">Every model route failed: 401 from openrouter — check OPENROUTER_API_KEY in /crew/env.<`,
		`data-testid="run-notice">Stopped: the agent kept repeating the same tool call (loop guard)`,
	} {
		if !strings.Contains(runs, want) {
			t.Errorf("runs page lacks %s", want)
		}
	}
	if n := strings.Count(runs, `data-testid="run-notice"`); n != 2 {
		t.Errorf("runs page has %d run notices, want 2 (the failed and the halted run)", n)
	}

	// A question ends the run: the chat shows it, without a spend line.
	appendTo("c1",
		&events.MessageReceived{Channel: "web", Text: "plan"},
		&events.RunStarted{RunID: "r4", Agent: "master", Trigger: "message"},
		&events.ModelCalled{RunID: "r4", Step: 1, Route: "a", Model: "m", CostUSD: cost(0.001),
			ToolCalls: []events.ToolCallRequest{{ID: "q1", Name: "ask_user", Arguments: json.RawMessage(`{"question":"Which day?"}`)}}},
		&events.ToolCompleted{RunID: "r4", Step: 1, CallID: "q1", Tool: "ask_user", Output: "Your question was shown to the owner."},
		&events.RunFinished{RunID: "r4", Status: events.RunDone, Reason: "ask_user"})
	check("asks", "The agent asks: Which day? — reply to answer.", "idle")
	if strings.Contains(page("/c/c1"), `data-testid="run-ending-spend"`) {
		t.Errorf("a question shows a spend line")
	}
}
