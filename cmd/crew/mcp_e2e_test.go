package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// everythingServer starts the reference MCP server (npm, pinned in
// .ci/npm/package.json) on 127.0.0.1 and returns its endpoint.
func everythingServer(t *testing.T) (url string, cmd *exec.Cmd) {
	t.Helper()
	js, _ := filepath.Abs("../../.ci/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if _, err := os.Stat(js); err != nil {
		t.Skipf("server-everything not installed at %s: run .ci/run once (npm install)", js)
	}
	preload, _ := filepath.Abs("testdata/bind-loopback.cjs")
	addr := freePort(t)
	_, port, _ := net.SplitHostPort(addr)
	cmd = exec.Command("node", "--require", preload, js, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	eventstest.Eventually(t, "server-everything listening on "+addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return "http://" + addr + "/mcp", cmd
}

// toolModel is an OpenAI-compatible server that plays replies in order and
// keeps, for each request, the declared tool names and the last message.
type toolModel struct {
	mu      sync.Mutex
	replies []string // "text:<words>" or "call:<name> <json args>"
	seen    []toolRequest
}

type toolRequest struct {
	tools  []string
	last   string // the last message's content
	role   string
	system string // the system prompt
}

func (m *toolModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var tr toolRequest
	for _, t := range req.Tools {
		tr.tools = append(tr.tools, t.Function.Name)
	}
	if n := len(req.Messages); n > 0 {
		tr.role, tr.last = req.Messages[n-1].Role, fmt.Sprint(req.Messages[n-1].Content)
		if req.Messages[0].Role == "system" {
			tr.system = fmt.Sprint(req.Messages[0].Content)
		}
	}
	m.mu.Lock()
	m.seen = append(m.seen, tr)
	reply := "text:out of replies"
	if len(m.replies) > 0 {
		reply, m.replies = m.replies[0], m.replies[1:]
	}
	n := len(m.seen)
	m.mu.Unlock()
	if rest, ok := strings.CutPrefix(reply, "slow:"); ok { // "slow:<ms>:<reply>": answered that much later
		ms, later, _ := strings.Cut(rest, ":")
		d, _ := strconv.Atoi(ms)
		select {
		case <-time.After(time.Duration(d) * time.Millisecond):
		case <-r.Context().Done():
		}
		reply = later
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if words, ok := strings.CutPrefix(reply, "text:"); ok {
		b, _ := json.Marshal(words)
		fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"content":%s},"finish_reason":"stop"}]}`+"\n\n", b)
	} else {
		name, args, _ := strings.Cut(strings.TrimPrefix(reply, "call:"), " ")
		a, _ := json.Marshal(args)
		fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":"tool_calls"}]}`+"\n\n", n, name, a)
	}
	fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"cost":0.0001}}`+"\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (m *toolModel) requests() []toolRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.seen)
}

func (m *toolModel) queue(replies ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replies = append(m.replies, replies...)
}

// mcpHome is a home whose master may use the MCP server at url, with
// get-sum marked read-only by the owner.
func mcpHome(t *testing.T, url string) string {
	t.Helper()
	home := initHome(t)
	f, err := os.OpenFile(filepath.Join(home, "config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	fmt.Fprintf(f, "\nmcp_servers:\n  everything:\n    url: %s\n    read_only_tools: [get-sum]\n    timeout_seconds: 20\n", url)
	f.Close()
	f, err = os.OpenFile(filepath.Join(home, "agent.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	fmt.Fprintf(f, "\nmcp: [everything]\n")
	f.Close()
	return home
}

// R-MCP, R-GATE-5 against the reference server: tool_search finds echo and
// the next model request declares it; echo asks (not read-only) and, once
// approved, "Echo: …" reaches the model; the owner's read-only get-sum runs
// without asking; a restart keeps the loaded set; the server killed
// mid-conversation gives a clear tool result and the turn goes on; crew
// doctor reports the server.
func TestMCPEverythingServerEndToEnd(t *testing.T) {
	url, node := everythingServer(t)
	home := mcpHome(t, url)
	out, _, code := crew(t, home, "doctor")
	if code != 0 || !strings.Contains(out, "  everything (streamable HTTP "+url+"): answers, ") || !strings.Contains(out, "read-only: get-sum") {
		t.Errorf("doctor does not report the MCP server:\n%s", out)
	}
	model := &toolModel{}
	api := httptest.NewServer(model)
	defer api.Close()
	env := []string{"MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL=" + api.URL + "/v1"}
	s := startServe(t, home, env...)

	model.queue(`call:tool_search {"query":"echo"}`, `call:mcp__everything__echo {"message":"hello mcp"}`, "text:echoed")
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "find the echo tool"})
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "awaiting approval", func(c convView) bool { return c.Status == "awaiting_approval" })
	reqs := model.requests()
	if !strings.Contains(reqs[0].system, "; MCP servers: everything") {
		t.Errorf("the roster line does not name the MCP server:\n%s", reqs[0].system)
	}
	if !slices.Contains(reqs[0].tools, "tool_search") || slices.Contains(reqs[0].tools, "mcp__everything__echo") {
		t.Errorf("first request declares %v: want tool_search and no MCP tool yet", reqs[0].tools)
	}
	if !slices.Contains(reqs[1].tools, "mcp__everything__echo") {
		t.Errorf("the request after tool_search declares %v, want mcp__everything__echo", reqs[1].tools)
	}
	if len(c.PendingApprovals) != 1 || c.PendingApprovals[0].Tool != "mcp__everything__echo" {
		t.Fatalf("pending %+v, want echo to ask", c.PendingApprovals)
	}
	page := getText(t, s.url+"/c/"+id)
	if !strings.Contains(page, "MCP server everything, tool echo") || !strings.Contains(page, "hello mcp") {
		t.Errorf("the approval card does not name server, tool and arguments")
	}
	if code, body := postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"}); code != 200 {
		t.Fatalf("approve = %d %v", code, body)
	}
	waitConv(t, s.url, id, "settled after echo", settled)
	reqs = model.requests()
	if last := reqs[len(reqs)-1]; last.role != "tool" || !strings.Contains(last.last, "Echo: hello mcp") {
		t.Errorf("the model got %q, want the echo", last.last)
	}

	model.queue(`call:tool_search {"names":["mcp__everything__get-sum","mcp__everything__nope"]}`, `call:mcp__everything__get-sum {"a":2,"b":40}`, "text:summed")
	postJSON(t, s.url+"/api/inbound", map[string]any{"text": "add 2 and 40", "conversation_id": id})
	waitConv(t, s.url, id, "settled after get-sum, with no approval", func(c convView) bool {
		if c.Status == "awaiting_approval" {
			t.Fatalf("get-sum (owner read-only) asked for approval")
		}
		return settled(c) && c.History[len(c.History)-1].Text == "summed"
	})
	reqs = model.requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(last.last, "The sum of 2 and 40 is 42") {
		t.Errorf("the model got %q, want the sum", last.last)
	}
	if r := reqs[len(reqs)-2]; !strings.Contains(r.last, "Refused (not one of your tools, or hidden by the owner): mcp__everything__nope") {
		t.Errorf("tool_search of an unknown name: %q", r.last)
	}
	// A script calls the owner-read-only MCP tool (R-SCR); echo it may not.
	model.queue(`call:tool_script {"script":"print(tools.call(\"mcp__everything__get-sum\", a=3, b=4)[\"output\"])\nprint(tools.call(\"mcp__everything__echo\", message=\"x\")[\"error\"])"}`, "text:scripted")
	postJSON(t, s.url+"/api/inbound", map[string]any{"text": "add by script", "conversation_id": id})
	waitConv(t, s.url, id, "settled after the script", func(c convView) bool { return settled(c) && c.History[len(c.History)-1].Text == "scripted" })
	reqs = model.requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(last.last, "The sum of 3 and 4 is 7") || !strings.Contains(last.last, "mcp__everything__echo cannot be called from a script") {
		t.Errorf("the script's result: %q", last.last)
	}
	s.stop(t)

	// A restart: the loaded set comes back from the conversation.
	s = startServe(t, home, env...)
	model.queue("text:still here")
	before := len(model.requests())
	postJSON(t, s.url+"/api/inbound", map[string]any{"text": "are you there", "conversation_id": id})
	waitConv(t, s.url, id, "settled after restart", func(c convView) bool { return settled(c) && c.History[len(c.History)-1].Text == "still here" })
	reqs = model.requests()
	if r := reqs[before]; !slices.Contains(r.tools, "mcp__everything__echo") || !slices.Contains(r.tools, "mcp__everything__get-sum") {
		t.Errorf("after a restart the request declares %v, want echo and get-sum", r.tools)
	}

	// The server dies mid-conversation: a clear result, the turn goes on.
	node.Process.Kill()
	model.queue(`call:mcp__everything__get-sum {"a":1,"b":1}`, "text:carried on")
	before = len(model.requests())
	postJSON(t, s.url+"/api/inbound", map[string]any{"text": "add again", "conversation_id": id})
	waitConv(t, s.url, id, "settled after the server died", func(c convView) bool { return settled(c) && c.History[len(c.History)-1].Text == "carried on" })
	reqs = model.requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(last.last, `MCP server "everything"`) || !strings.Contains(last.last, "is not answering") || len(reqs) != before+2 {
		t.Errorf("after the server died the model got %q", last.last)
	}
	s.stop(t)
}

func getText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}
