package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
)

func postJSON(t *testing.T, url string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

type convView struct {
	Status           string   `json:"status"`
	Queued           int      `json:"queued"`
	Halted           string   `json:"halted"`
	LastRunID        string   `json:"last_run_id"`
	ActiveRuns       []string `json:"active_runs"`
	PendingApprovals []struct {
		ID   string `json:"id"`
		Tool string `json:"tool"`
	} `json:"pending_approvals"`
	History []struct {
		Role    string `json:"role"`
		Text    string `json:"text"`
		IsError bool   `json:"is_error"`
		// ToolCalls of an assistant message: a reply still being acted on.
		ToolCalls []json.RawMessage `json:"tool_calls"`
	} `json:"history"`
}

// waitConv polls the conversation until ok says so.
func waitConv(t *testing.T, url, id string, what string, ok func(c convView) bool) convView {
	t.Helper()
	var c convView
	seen := false
	defer func() {
		if !seen { // the wait failed: show what it last saw
			t.Logf("conversation %s last seen: %+v", id, c)
		}
	}()
	eventstest.Eventually(t, "conversation "+id+" "+what, func() bool {
		c = convView{}
		return getJSON(t, url+"/api/conversations/"+id, &c) == 200 && ok(c)
	})
	seen = true
	return c
}

// settled: no run open, no message waiting for one, and the last word is
// the agent's.
func settled(c convView) bool {
	// The status is the projection's, which may lag the history a moment:
	// a last reply with tool calls is a turn still running, and an idle
	// from before the run started has seen no run end.
	if c.Status != "idle" || c.Queued != 0 || c.LastRunID == "" || len(c.ActiveRuns) != 0 || len(c.History) == 0 {
		return false
	}
	last := c.History[len(c.History)-1]
	return last.Role == "assistant" && len(last.ToolCalls) == 0
}

func writeScript(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const writeScriptYAML = `
- tool_calls:
    - name: workspace_write
      arguments: {path: note.txt, content: "hello from the agent"}
- text: "All done."
`

// The HTTP path end to end (issue 3): message → approval → 409 on a new
// message → approve → tool result → final answer; then a second decision is
// a conflict.
func TestHTTPApproveFlow(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	if _, _, code := crew(t, home, "init"); code != 0 {
		t.Fatal("init failed")
	}
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+writeScript(t, writeScriptYAML))
	code, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "write me a note"})
	if code != 202 {
		t.Fatalf("inbound = %d %v", code, acc)
	}
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "awaiting approval", func(c convView) bool { return c.Status == "awaiting_approval" })
	if len(c.PendingApprovals) != 1 || c.PendingApprovals[0].Tool != "workspace_write" {
		t.Fatalf("pending = %+v", c.PendingApprovals)
	}
	if _, err := os.Stat(filepath.Join(home, "workspace", "note.txt")); err == nil {
		t.Fatal("the tool ran before approval")
	}
	if code, body := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "hello?", "conversation_id": id}); code != 409 {
		t.Errorf("message while awaiting approval = %d %v, want 409", code, body)
	}
	approval := c.PendingApprovals[0].ID
	if code, body := postJSON(t, s.url+"/api/approvals/"+approval, map[string]any{"decision": "approve"}); code != 200 {
		t.Fatalf("approve = %d %v", code, body)
	}
	if code, _ := postJSON(t, s.url+"/api/approvals/"+approval, map[string]any{"decision": "deny"}); code != 409 {
		t.Errorf("second decision = %d, want 409", code)
	}
	c = waitConv(t, s.url, id, "idle", settled)
	got, err := os.ReadFile(filepath.Join(home, "workspace", "note.txt"))
	if err != nil || string(got) != "hello from the agent" {
		t.Errorf("note.txt = %q, %v", got, err)
	}
	if last := c.History[len(c.History)-1]; last.Role != "assistant" || last.Text != "All done." {
		t.Errorf("last message = %+v", last)
	}
	s.stop(t)
}

func TestHTTPDenyFlow(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	if _, _, code := crew(t, home, "init"); code != 0 {
		t.Fatal("init failed")
	}
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+writeScript(t, writeScriptYAML))
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "write me a note"})
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "awaiting approval", func(c convView) bool { return c.Status == "awaiting_approval" })
	if code, body := postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "deny"}); code != 200 {
		t.Fatalf("deny = %d %v", code, body)
	}
	c = waitConv(t, s.url, id, "idle", settled)
	if _, err := os.Stat(filepath.Join(home, "workspace", "note.txt")); err == nil {
		t.Error("a denied write happened")
	}
	var denied bool
	for _, m := range c.History {
		if m.Role == "tool" && strings.HasPrefix(m.Text, "DENIED_TOOL") {
			denied = true
		}
	}
	if !denied {
		t.Errorf("no DENIED_TOOL result in %+v", c.History)
	}
	s.stop(t)
}

func TestHTTPBadInput(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	if _, _, code := crew(t, home, "init"); code != 0 {
		t.Fatal("init failed")
	}
	s := startServe(t, home)
	for _, c := range []struct {
		body string
		code int
	}{
		{`{"text":`, 400},
		{`{"text":"hi","bogus":1}`, 400},
		{`{"text":"   "}`, 400},
		{`{"text":"/steer"}`, 422},
		{`{"text":"hi","agent":"nobody"}`, 404},
		{`{"text":"hi","conversation_id":"nope"}`, 404},
		{`{"text":"hi","conversation_id":"../etc"}`, 400},
		{`{"text":"` + strings.Repeat("x", 1<<20) + `"}`, 413},
	} {
		resp, err := http.Post(s.url+"/api/inbound", "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]map[string]string
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != c.code || body["error"]["code"] == "" {
			t.Errorf("POST %.40s = %d %v, want %d with a JSON error", c.body, resp.StatusCode, body, c.code)
		}
	}
	if code, _ := postJSON(t, s.url+"/api/approvals/nope", map[string]any{"decision": "approve"}); code != 404 {
		t.Errorf("unknown approval = %d", code)
	}
	if code, _ := postJSON(t, s.url+"/api/approvals/nope", map[string]any{"decision": "maybe"}); code != 400 {
		t.Errorf("bad decision = %d", code)
	}
	s.stop(t)
}

// R-REL-2: kill -9 in the middle of a turn, then restart: the accepted
// message is there, the in-flight turn resumes, and the tool call whose
// result was never recorded is closed as interrupted, not run again.
func TestKill9MidTurnResumes(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	if _, _, code := crew(t, home, "init"); code != 0 {
		t.Fatal("init failed")
	}
	// Autonomous, so shell_run runs without asking.
	agentYAML := filepath.Join(home, "agent.yaml")
	b, _ := os.ReadFile(agentYAML)
	os.WriteFile(agentYAML, []byte(strings.Replace(string(b), "autonomous: false", "autonomous: true", 1)), 0o600)
	marker := filepath.Join(t.TempDir(), "runs.log")
	script := writeScript(t, `
- tool_calls:
    - name: shell_run
      arguments: {command: "echo started >> `+marker+`; sleep 20"}
- text: "The command was interrupted; I will not rerun it blindly."
`)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+script)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "run the long job"})
	id := acc["conversation_id"].(string)
	eventstest.Eventually(t, "the tool to start", func() bool {
		b, _ := os.ReadFile(marker)
		return strings.Contains(string(b), "started")
	})
	s.kill9(t)

	s = startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+script)
	c := waitConv(t, s.url, id, "idle after resuming", settled)
	var interrupted bool
	for _, m := range c.History {
		if m.Role == "tool" && strings.Contains(m.Text, "may or may not have run") {
			interrupted = true
		}
	}
	if !interrupted {
		t.Errorf("no interrupted result in %+v", c.History)
	}
	if last := c.History[len(c.History)-1]; last.Text != "The command was interrupted; I will not rerun it blindly." {
		t.Errorf("last message = %+v", last)
	}
	if b, _ := os.ReadFile(marker); strings.Count(string(b), "started") != 1 {
		t.Errorf("the tool ran %d times, want 1 (never re-run after the crash)", strings.Count(string(b), "started"))
	}
	s.stop(t)
}

// R-REL-2: a pending approval survives a restart and is still decidable.
func TestPendingApprovalSurvivesRestart(t *testing.T) {
	home := initHome(t)
	script := "MY_AGENT_ROUTES=fake:script:" + writeScript(t, writeScriptYAML)
	s := startServe(t, home, script)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "write me a note"})
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "awaiting approval", func(c convView) bool { return c.Status == "awaiting_approval" })
	s.kill9(t)
	s = startServe(t, home, script)
	if code, body := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "still there?", "conversation_id": id}); code != 409 {
		t.Errorf("message after restart = %d %v, want 409 (still awaiting approval)", code, body)
	}
	if code, body := postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"}); code != 200 {
		t.Fatalf("approve after restart = %d %v", code, body)
	}
	waitConv(t, s.url, id, "idle", settled)
	if got, _ := os.ReadFile(filepath.Join(home, "workspace", "note.txt")); string(got) != "hello from the agent" {
		t.Errorf("note.txt = %q", got)
	}
	s.stop(t)
}

// R-LOOP-6 / R-OBS-1: the conversation's SSE feed carries stored events
// with their sequence as id and the model's text deltas while it writes; a
// reconnect with Last-Event-ID resumes exactly after that event.
func TestStreamDeltasAndResume(t *testing.T) {
	home := initHome(t)
	script := writeScript(t, `
- text: "Here is a fairly long answer so that it streams in several pieces."
  delay: 300ms
`)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+script)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "talk to me"})
	id := acc["conversation_id"].(string)
	resp, err := http.Get(s.url + "/api/stream?conversation=" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	frames := readFrames(t, resp.Body, func(f sseFrame) bool { return f.event == "run_finished" })
	var deltas, ids []string
	for _, f := range frames {
		switch {
		case f.event == "delta":
			deltas = append(deltas, f.data)
		case f.id != "":
			ids = append(ids, f.id)
		}
	}
	if len(deltas) < 2 {
		t.Errorf("%d delta frames, want the text in several pieces", len(deltas))
	}
	if len(ids) < 4 {
		t.Fatalf("stored events with ids: %v", ids)
	}
	// Resume after the second stored event: the third comes next, no gap,
	// no repeat.
	req, _ := http.NewRequest(http.MethodGet, s.url+"/api/stream?conversation="+id, nil)
	req.Header.Set("Last-Event-ID", ids[1])
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	again := readFrames(t, resp2.Body, func(f sseFrame) bool { return f.id != "" })
	if got := again[len(again)-1].id; got != ids[2] {
		t.Errorf("resumed at id %s, want %s", got, ids[2])
	}
	s.stop(t)
}

type sseFrame struct{ event, id, data string }

// readFrames reads SSE frames until stop says so (or 30 s pass).
func readFrames(t *testing.T, body io.Reader, stop func(sseFrame) bool) []sseFrame {
	t.Helper()
	type result struct {
		frames []sseFrame
		err    error
	}
	done := make(chan result, 1)
	go func() {
		var out []sseFrame
		var f sseFrame
		sc := bufio.NewScanner(body)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if f.event != "" {
					out = append(out, f)
					if stop(f) {
						done <- result{frames: out}
						return
					}
				}
				f = sseFrame{}
			case strings.HasPrefix(line, "event: "):
				f.event = line[len("event: "):]
			case strings.HasPrefix(line, "id: "):
				f.id = line[len("id: "):]
			case strings.HasPrefix(line, "data: "):
				f.data += line[len("data: "):]
			}
		}
		done <- result{frames: out, err: fmt.Errorf("stream ended: %v", sc.Err())}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("%v after %d frames", r.err, len(r.frames))
		}
		return r.frames
	case <-time.After(30 * time.Second):
		t.Fatal("no stop frame within 30 s")
		return nil
	}
}
