package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
)

func initHome(t *testing.T) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	if _, _, code := crew(t, home, "init"); code != 0 {
		t.Fatal("init failed")
	}
	return home
}

type runView struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
	Steps  []struct {
		ModelCalls []struct {
			Route string  `json:"route"`
			Error string  `json:"error"`
			Cost  *string `json:"-"`
		} `json:"model_calls"`
	} `json:"steps"`
}

// R-OBS-3: crew replay reproduces a recorded run exactly, and shows the
// first divergence when the scripted replies change.
func TestReplayCommand(t *testing.T) {
	home := initHome(t)
	script := writeScript(t, writeScriptYAML)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+script)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "write me a note"})
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "awaiting approval", func(c convView) bool { return c.Status == "awaiting_approval" })
	postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"})
	waitConv(t, s.url, id, "idle", settled)
	runs := finishedRuns(t, s.url, id, 1)
	if len(runs) != 1 {
		t.Fatalf("runs = %+v", runs)
	}
	run := runs[0].RunID

	// While the server runs, replay asks it for the events.
	// With the settings of the recording: the roster names its routes.
	routes := []string{"MY_AGENT_ROUTES=fake:script:" + script}
	out, errOut, code := crewEnv(t, home, routes, "replay", run)
	if code != 0 || !strings.Contains(out, "events identical") {
		t.Fatalf("replay on a running server: code %d\n%s%s", code, out, errOut)
	}
	s.stop(t)
	out, errOut, code = crewEnv(t, home, routes, "replay", run)
	if code != 0 || !strings.Contains(out, "events identical, no tool run") {
		t.Fatalf("replay: code %d\n%s%s", code, out, errOut)
	}
	os.Remove(filepath.Join(home, "workspace", "note.txt"))
	if _, err := os.Stat(filepath.Join(home, "workspace", "note.txt")); err == nil {
		t.Fatal("setup")
	}
	changed := writeScript(t, strings.Replace(writeScriptYAML, "note.txt", "other.txt", 1))
	out, errOut, code = crew(t, home, "replay", run, "--route", "fake:script:"+changed)
	if code != 1 || !strings.Contains(out, "DIVERGED") || !strings.Contains(out, "other.txt") {
		t.Errorf("replay with changed replies: code %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(home, "workspace", "note.txt")); err == nil {
		t.Error("replay ran a tool")
	}
}

// R-LLM-1 through the real OpenAI-compatible client: a 500 on route 1
// falls back to route 2 with a route_fallback event; the tool call and its
// id round-trip; the reply streams.
func TestRouteFallbackOverHTTP(t *testing.T) {
	var calls atomic.Int32
	var system atomic.Value
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string           `json:"model"`
			Messages []map[string]any `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		calls.Add(1)
		if sys, ok := req.Messages[0]["content"].(string); ok && req.Messages[0]["role"] == "system" {
			system.Store(sys)
		}
		if req.Model == "vendor/broken" {
			http.Error(w, `{"error":{"message":"upstream exploded"}}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		last := req.Messages[len(req.Messages)-1]
		if last["role"] == "tool" {
			if last["tool_call_id"] != "call_abc" {
				http.Error(w, "tool_call_id lost", 400)
				return
			}
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"The workspace "}}]}`+"\n\n")
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"is empty."},"finish_reason":"stop"}]}`+"\n\n")
		} else {
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"workspace_list","arguments":"{\"pa"}}]}}]}`+"\n\n")
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\".\"}"}}]},"finish_reason":"tool_calls"}]}`+"\n\n")
		}
		fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"cost":0.0001}}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer api.Close()
	home := initHome(t)
	s := startServe(t, home,
		"MY_AGENT_ROUTES=openrouter:vendor/broken,openrouter:vendor/good",
		"OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+api.URL+"/v1")
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "what is in my workspace?"})
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "idle", settled)
	if last := c.History[len(c.History)-1]; last.Text != "The workspace is empty." {
		t.Errorf("answer = %+v\n%s", last, s.stderr)
	}
	runs := finishedRuns(t, s.url, id, 1)
	var run map[string]any
	getJSON(t, s.url+"/api/runs/"+runs[0].RunID, &run)
	b, _ := json.Marshal(run)
	if !strings.Contains(string(b), "vendor/broken") || !strings.Contains(string(b), "fallback") {
		t.Errorf("run shows no fallback from vendor/broken:\n%s", b)
	}
	// The request carried the assembled system prompt: persona, roster,
	// date line last (R-CTX-1).
	sys, _ := system.Load().(string)
	if !strings.Contains(sys, "# The crew") || !strings.Contains(sys, "Assistant (master)") ||
		!regexp.MustCompile(`Today: \d{4}-\d{2}-\d{2}\.$`).MatchString(sys) {
		t.Errorf("system prompt sent:\n%s", sys)
	}
	// The export holds the route_fallback event.
	out, _, _ := crew(t, home, "export", id)
	if !strings.Contains(out, `"type":"route_fallback"`) || !strings.Contains(out, "upstream exploded") {
		t.Errorf("export has no route_fallback with the error")
	}
	s.stop(t)
}

// R-GATE-3 end to end: an approval nobody answers expires (the minimum
// TTL, 60 s), is handled as a deny, and the tool never runs.
func TestHTTPApprovalExpires(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the 60 s minimum approval TTL")
	}
	t.Parallel()
	home := initHome(t)
	cfg := filepath.Join(home, "config.yaml")
	b, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(b), "approval_ttl_seconds: 600", "approval_ttl_seconds: 60", 1)), 0o600)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+writeScript(t, writeScriptYAML))
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "write me a note"})
	id := acc["conversation_id"].(string)
	waitConv(t, s.url, id, "awaiting approval", func(c convView) bool { return c.Status == "awaiting_approval" })
	var c convView
	eventstest.EventuallyWithin(t, 90*time.Second, "the approval to expire", func() bool {
		c = convView{}
		return getJSON(t, s.url+"/api/conversations/"+id, &c) == 200 && settled(c)
	})
	var expired bool
	for _, m := range c.History {
		if m.Role == "tool" && strings.Contains(m.Text, "expired") && strings.Contains(m.Text, "nothing changed") {
			expired = true
		}
	}
	if !expired {
		t.Errorf("no expiry result in %+v", c.History)
	}
	if _, err := os.Stat(filepath.Join(home, "workspace", "note.txt")); err == nil {
		t.Error("an expired approval ran its tool")
	}
	s.stop(t)
}

// finishedRuns waits for the runs projection, which catches up a moment
// after the conversations one, to hold n finished runs of conversation id.
func finishedRuns(t *testing.T, base, id string, n int) []runView {
	t.Helper()
	var runs []runView
	eventstest.Eventually(t, fmt.Sprintf("%d finished runs of %s", n, id), func() bool {
		runs = nil
		getJSON(t, base+"/api/conversations/"+id+"/runs", &runs)
		if len(runs) < n {
			return false
		}
		for _, r := range runs {
			if r.Status == "" || r.Status == "running" {
				return false
			}
		}
		return true
	})
	return runs
}
