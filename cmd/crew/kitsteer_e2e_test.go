package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// toolEmulator is an Ollama-shaped /chat/completions endpoint whose first
// request waits for release and then asks for workspace_list; every later
// one answers with text. It keeps each request's messages.
type toolEmulator struct {
	*httptest.Server
	release chan struct{}
	mu      sync.Mutex
	bodies  [][]map[string]any
}

func newToolEmulator(t *testing.T) *toolEmulator {
	t.Helper()
	e := &toolEmulator{release: make(chan struct{})}
	e.Server = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.Close)
	return e
}

func (e *toolEmulator) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/api/tags" {
		io.WriteString(w, `{"models":[{"name":"llama3.2"}]}`)
		return
	}
	var body struct {
		Messages []map[string]any `json:"messages"`
	}
	raw, _ := io.ReadAll(r.Body)
	json.Unmarshal(raw, &body)
	e.mu.Lock()
	n := len(e.bodies)
	e.bodies = append(e.bodies, body.Messages)
	e.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	if n == 0 {
		select {
		case <-e.release:
		case <-time.After(60 * time.Second):
		}
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"workspace_list","arguments":"{}"}}]}}]}`+"\n\n")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`+"\n\n")
	} else {
		fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"content":"answer %d"}}]}`+"\n\n", n)
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
	}
	fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":300,"completion_tokens":5}}`+"\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (e *toolEmulator) request(n int) []map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n >= len(e.bodies) {
		return nil
	}
	return e.bodies[n]
}

// textOf is a message's text, whether its content is a string or parts.
func textOf(m map[string]any) string {
	switch c := m["content"].(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if part, ok := p.(map[string]any); ok {
				s, _ := part["text"].(string)
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

// R-IN-3 (issue 28): a kit command sent while a turn runs is taken in at
// the next tool boundary as /steer is — the request after the tool result
// carries the command's prompt — not queued as an ordinary message; three
// ordinary messages that waited meanwhile are answered together by one
// turn when the running one ends (R-IN-2).
func TestKitCommandMidTurnInjectedAtNextToolBoundary(t *testing.T) {
	api := newToolEmulator(t)
	home := initHome(t)
	s := startServe(t, home, "MY_AGENT_ROUTES=ollama:llama3.2", "OLLAMA_HOST="+api.URL)
	code, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "list my workspace"})
	if code != 202 {
		t.Fatalf("first message: %d %v", code, acc)
	}
	id := acc["conversation_id"].(string)
	waitConv(t, s.url, id, "running", func(c convView) bool { return len(c.ActiveRuns) > 0 && api.request(0) != nil })
	code, kit := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "/tongket travel", "conversation_id": id})
	if code != 202 || kit["steer"] != true {
		t.Fatalf("/tongket mid-turn: %d %v, want accepted as a steer", code, kit)
	}
	for _, text := range []string{"one", "two", "three"} {
		if code, q := postJSON(t, s.url+"/api/inbound", map[string]any{"text": text, "conversation_id": id}); code != 202 || q["steer"] == true {
			t.Fatalf("message %q: %d %v, want queued", text, code, q)
		}
	}
	close(api.release)
	waitConv(t, s.url, id, "all answered", func(c convView) bool { return settled(c) && api.request(2) != nil })

	second := api.request(1)
	toolAt, kitAt := -1, -1
	for i, m := range second {
		if m["role"] == "tool" {
			toolAt = i
		}
		if m["role"] == "user" && strings.Contains(textOf(m), "Sum up my week") && strings.Contains(textOf(m), "travel") {
			kitAt = i
		}
	}
	if toolAt < 0 || kitAt != len(second)-1 || kitAt < toolAt {
		t.Fatalf("the request after the tool result: tool result at %d, the kit command's prompt at %d of %d messages; want the prompt last, after the result", toolAt, kitAt, len(second))
	}
	for _, m := range second {
		if s := textOf(m); m["role"] == "user" && (s == "one" || s == "two" || s == "three") {
			t.Errorf("a waiting message reached the running turn: %q", s)
		}
	}
	third := api.request(2)
	var users []string
	for _, m := range third[len(third)-3:] {
		if m["role"] == "user" {
			users = append(users, textOf(m))
		}
	}
	if strings.Join(users, ",") != "one,two,three" {
		t.Errorf("the turn after: last user messages %q, want the three waiting messages together", users)
	}
	if api.request(3) != nil {
		t.Errorf("a fourth model call: the waiting messages were not answered by one turn")
	}
	s.stop(t)
}
