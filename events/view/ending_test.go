package view

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
)

// TestRunEndingSentences (issue 10 item 8): every way a run can end
// without a normal answer gets one plain sentence saying what to do; the
// web chat and Telegram both take it from here.
func TestRunEndingSentences(t *testing.T) {
	const home = "/h"
	for _, tc := range []struct {
		name string
		end  Ending
		kind string
		want []string
	}{
		{"401", Ending{Status: events.RunFailed, Reason: "model_error", Error: "openrouter: permanent model error: HTTP 401: No auth credentials found"},
			EndFailed, []string{"Every model route failed: 401 from openrouter — check OPENROUTER_API_KEY in /h/env."}},
		{"402", Ending{Status: events.RunFailed, Reason: "model_error", Error: "openrouter: permanent model error: HTTP 402: Insufficient credits"},
			EndFailed, []string{"402 from openrouter (out of credit)"}},
		{"404", Ending{Status: events.RunFailed, Reason: "model_error", Error: "openrouter: permanent model error: HTTP 404: no endpoints"},
			EndFailed, []string{"404 from openrouter (no such model)", "routes"}},
		{"429", Ending{Status: events.RunFailed, Reason: "model_error", Error: "gave up after 4 attempts: openrouter: rate limited: HTTP 429: slow down"},
			EndFailed, []string{"429 from openrouter (rate limited)", "wait a minute"}},
		{"5xx", Ending{Status: events.RunFailed, Reason: "model_error", Error: "ollama: provider unavailable: HTTP 503: busy"},
			EndFailed, []string{"503 from ollama (the provider is down or overloaded)", "fallback route"}},
		{"no key", Ending{Status: events.RunFailed, Reason: "model_error", Error: "openrouter: permanent model error: no OpenRouter API key (OPENROUTER_API_KEY)"},
			EndFailed, []string{"openrouter has no API key — set OPENROUTER_API_KEY in /h/env."}},
		{"ollama down", Ending{Status: events.RunFailed, Reason: "model_error", Error: "ollama: provider unavailable: dial tcp 127.0.0.1:11434: connection refused"},
			EndFailed, []string{"Ollama did not answer", "OLLAMA_HOST"}},
		{"context", Ending{Status: events.RunFailed, Reason: "model_error", Error: "fake: context too long: HTTP 400: scripted context_too_long"},
			EndFailed, []string{"too long for the model", "new conversation"}},
		{"no routes", Ending{Status: events.RunFailed, Reason: "model_error", Error: NoRoutes},
			EndFailed, []string{"no model routes", "agent.yaml"}},
		{"odd model error", Ending{Status: events.RunFailed, Reason: "model_error", Error: "something strange"},
			EndFailed, []string{"Every model route failed: something strange", "/h/env"}},
		{"max_steps", Ending{Status: events.RunHalted, Reason: "max_steps"}, EndHalted, []string{"(max_steps)", "send a message"}},
		{"loop", Ending{Status: events.RunHalted, Reason: "loop"}, EndHalted, []string{"(loop guard)", "send a message"}},
		{"cost_cap", Ending{Status: events.RunHalted, Reason: "cost_cap"}, EndHalted, []string{"cost cap", "cost_cap_usd"}},
		{"hook", Ending{Status: events.RunHalted, Reason: "hook", Error: "no secrets in prompts"}, EndHalted, []string{"Stopped by a hook: no secrets in prompts"}},
		{"steer_hook", Ending{Status: events.RunHalted, Reason: "steer_hook", Error: "nope"}, EndHalted, []string{"refused your /steer: nope"}},
		{"ask_user", Ending{Status: events.RunDone, Reason: "ask_user", Replied: true, Question: "Which day?"}, EndAsks, []string{"The agent asks: Which day? — reply to answer."}},
		{"poisoned", Ending{Status: events.RunFailed, Reason: "poisoned", Error: "pass failed 3 times: boom"}, EndFailed, []string{"again and again: pass failed 3 times: boom", "not retried until then"}},
		{"interrupted", Ending{Status: events.RunFailed, Reason: "interrupted"}, EndInterrupted, []string{"Interrupted: ", "twice", "not resumed again"}},
		{"no reason", Ending{Status: events.RunFailed, Error: `agent "x" is not loaded: check its agent.yaml`}, EndFailed, []string{`The run failed: agent "x" is not loaded`, "send a message"}},
		{"unknown reason", Ending{Status: events.RunHalted, Reason: "moon_phase", Error: "full"}, EndHalted, []string{"The run halted (moon_phase): full — send a message to try again."}},
		{"unknown status", Ending{Status: "vanished"}, EndFailed, []string{"The run vanished — send a message to try again."}},
		{"no text", Ending{Status: events.RunDone}, EndNoReply, []string{"finished without writing a reply"}},
	} {
		if got := tc.end.Kind(); got != tc.kind {
			t.Errorf("%s: kind %q, want %q", tc.name, got, tc.kind)
		}
		got := tc.end.Notice(home)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: notice %q lacks %q", tc.name, got, w)
			}
		}
		if strings.Contains(got, "\n") {
			t.Errorf("%s: notice %q is not one line", tc.name, got)
		}
	}
	if got := (Ending{Status: events.RunDone, Replied: true}).Notice(home); got != "" {
		t.Errorf("a run that answered got a notice: %q", got)
	}
	if got := (Ending{Status: events.RunFailed, Reason: "model_error", Error: "openrouter: permanent model error: HTTP 401: x"}).Notice(""); !strings.Contains(got, "in the home's env file") {
		t.Errorf("without a home: %q", got)
	}
}

func TestRunEndingSpend(t *testing.T) {
	for _, tc := range []struct {
		end  Ending
		want string
	}{
		{Ending{}, "$0.0000"},
		{Ending{CostUSD: 0.0105}, "$0.0105"},
		{Ending{UnknownCostCalls: 2}, "cost unknown"},
		{Ending{CostUSD: 0.01, UnknownCostCalls: 1}, "$0.0100 + 1 call of unknown cost"},
		{Ending{CostUSD: 0.01, UnknownCostCalls: 3}, "$0.0100 + 3 calls of unknown cost"},
	} {
		if got := tc.end.Spend(); got != tc.want {
			t.Errorf("Spend(%+v) = %q, want %q", tc.end, got, tc.want)
		}
	}
}

// TestReadableArgs (issue 10 item 10): commands and texts come out as they
// are; the rest as JSON without HTML escapes, numbers as written.
func TestReadableArgs(t *testing.T) {
	// As the log stores it: Go's encoder escaped the >.
	raw, _ := json.Marshal(map[string]any{"command": "echo hi > out.txt\ncat out.txt", "timeout_seconds": 30, "note": "a<b"})
	if !strings.Contains(string(raw), `\u003e`) {
		t.Fatalf("setup: %s is not escaped", raw)
	}
	rest, texts := ReadableArgs(raw)
	if len(texts) != 1 || texts[0].Name != "command" || texts[0].Text != "echo hi > out.txt\ncat out.txt" {
		t.Errorf("texts = %+v", texts)
	}
	if want := "{\n  \"note\": \"a<b\",\n  \"timeout_seconds\": 30\n}"; rest != want {
		t.Errorf("rest = %q, want %q", rest, want)
	}
	rest, texts = ReadableArgs(json.RawMessage(`{"path":"a.txt","content":"line 1\nline 2","old":"x\ny"}`))
	if len(texts) != 2 || texts[0].Name != "content" || texts[1].Name != "old" || !strings.Contains(rest, `"path": "a.txt"`) {
		t.Errorf("content and a multi-line field: rest %q, texts %+v", rest, texts)
	}
	if rest, texts = ReadableArgs(json.RawMessage(`{"command":"ls"}`)); rest != "" || len(texts) != 1 {
		t.Errorf("a lone command: rest %q, texts %+v", rest, texts)
	}
	if rest, _ = ReadableArgs(json.RawMessage(`{"n":12345678901234567890}`)); !strings.Contains(rest, "12345678901234567890") {
		t.Errorf("a big number changed: %q", rest)
	}
	if rest, _ = ReadableArgs(json.RawMessage(`{"cut`)); rest != `{"cut` {
		t.Errorf("not JSON: %q", rest)
	}
}
