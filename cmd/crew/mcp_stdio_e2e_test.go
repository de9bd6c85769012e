package main

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// npmServerJS is the entry point of a reference MCP server (npm, pinned in
// .ci/npm/package.json).
func npmServerJS(t *testing.T, pkg string) string {
	t.Helper()
	js, _ := filepath.Abs("../../.ci/npm/node_modules/@modelcontextprotocol/" + pkg + "/dist/index.js")
	if _, err := os.Stat(js); err != nil {
		t.Skipf("%s not installed at %s: run .ci/run once (npm install)", pkg, js)
	}
	return js
}

// processesWith are the processes whose environment holds kv.
func processesWith(kv string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && strings.Contains("\x00"+string(b)+"\x00", "\x00"+kv+"\x00") {
			out = append(out, pid)
		}
	}
	return out
}

// R-MCP over stdio through crew serve, with the reference servers started
// by the crew in the sandbox: tool_search finds server-everything's echo,
// which asks and once approved answers; server-filesystem, allowed the
// whole home by its arguments but given only the workspace by its entry,
// reads a file in the workspace and sees nothing else of the home (no env,
// no data/); server-everything killed mid-session is started again and the
// next call works; crew doctor names each server's transport.
func TestMCPStdioServersEndToEnd(t *testing.T) {
	everything := npmServerJS(t, "server-everything")
	filesystem := npmServerJS(t, "server-filesystem")
	home := initHome(t)
	ws := filepath.Join(home, "workspace")
	must(t, os.MkdirAll(ws, 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "note.txt"), []byte("the note in the workspace"), 0o644))
	marker := "m" + strconv.Itoa(os.Getpid()) + filepath.Base(home)
	f, err := os.OpenFile(filepath.Join(home, "config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	fmt.Fprintf(f, "\nmcp_servers:\n  everything:\n    command: [node, %q, stdio]\n    env: {CREW_TEST_MARKER: %s}\n    read_only_tools: [get-sum]\n"+
		"  files:\n    command: [node, %q, %q]\n    read_paths: [workspace]\n    read_only_tools: [read_text_file, list_directory]\n",
		everything, marker, filesystem, home)
	f.Close()
	f, err = os.OpenFile(filepath.Join(home, "agent.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	fmt.Fprintf(f, "\nmcp: [everything, files]\n")
	f.Close()

	out, _, code := crew(t, home, "doctor")
	if code != 0 || !strings.Contains(out, "  everything (stdio node ") || !strings.Contains(out, "  files (stdio node ") || !strings.Contains(out, "read-only: get-sum") {
		t.Errorf("doctor does not report the stdio servers:\n%s", out)
	}
	if strings.Contains(out, marker) {
		t.Errorf("doctor shows an env value:\n%s", out)
	}

	model := &toolModel{}
	api := httptest.NewServer(model)
	defer api.Close()
	env := []string{"MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL=" + api.URL + "/v1"}
	s := startServe(t, home, env...)
	defer s.stop(t)
	if len(processesWith("CREW_TEST_MARKER="+marker)) != 0 {
		t.Errorf("server-everything started before first use")
	}

	model.queue(`call:tool_search {"query":"echo"}`, `call:mcp__everything__echo {"message":"hello stdio"}`, "text:echoed")
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "find the echo tool"})
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "awaiting approval", func(c convView) bool { return c.Status == "awaiting_approval" })
	reqs := model.requests()
	if !slices.Contains(reqs[1].tools, "mcp__everything__echo") {
		t.Errorf("the request after tool_search declares %v, want mcp__everything__echo", reqs[1].tools)
	}
	if len(c.PendingApprovals) != 1 || c.PendingApprovals[0].Tool != "mcp__everything__echo" {
		t.Fatalf("pending %+v, want echo to ask", c.PendingApprovals)
	}
	if code, body := postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"}); code != 200 {
		t.Fatalf("approve = %d %v", code, body)
	}
	waitConv(t, s.url, id, "settled after echo", settled)
	reqs = model.requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(last.last, "Echo: hello stdio") {
		t.Errorf("the model got %q, want the echo", last.last)
	}

	say := func(text, want string, calls ...string) string {
		t.Helper()
		model.queue(append(calls, "text:"+want)...)
		postJSON(t, s.url+"/api/inbound", map[string]any{"text": text, "conversation_id": id})
		waitConv(t, s.url, id, "settled: "+want, func(c convView) bool {
			if c.Status == "awaiting_approval" {
				t.Fatalf("%s: asked for approval", text)
			}
			return settled(c) && c.History[len(c.History)-1].Text == want
		})
		reqs := model.requests()
		return reqs[len(reqs)-1].last
	}
	names := `call:tool_search {"names":["mcp__files__read_text_file","mcp__files__list_directory","mcp__everything__get-sum"]}`
	got := say("read the note", "read", names, `call:mcp__files__read_text_file {"path":"`+filepath.Join(ws, "note.txt")+`"}`)
	if !strings.Contains(got, "the note in the workspace") {
		t.Errorf("read inside the allowed folder: %q", got)
	}
	got = say("list the home", "listed", `call:mcp__files__list_directory {"path":"`+home+`"}`)
	if !strings.Contains(got, "workspace") || strings.Contains(got, "config.yaml") || strings.Contains(got, "data") || strings.Contains(got, "[FILE] env") {
		t.Errorf("the home as the filesystem server sees it: %q", got)
	}
	got = say("read the env", "refused", `call:mcp__files__read_text_file {"path":"`+filepath.Join(home, "env")+`"}`)
	if !strings.Contains(strings.ToLower(got), "error") && !strings.Contains(got, "ENOENT") {
		t.Errorf("reading the env file: %q", got)
	}

	if got := say("add", "summed", `call:mcp__everything__get-sum {"a":2,"b":40}`); !strings.Contains(got, "The sum of 2 and 40 is 42") {
		t.Fatalf("get-sum: %q", got)
	}
	pids := processesWith("CREW_TEST_MARKER=" + marker)
	if len(pids) == 0 {
		t.Fatal("no process of server-everything found")
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	eventstest.Eventually(t, "server-everything gone", func() bool { return len(processesWith("CREW_TEST_MARKER="+marker)) == 0 })
	// The crew has seen its process end (a call made before it has may
	// meet the dead session and be told it may or may not have run).
	eventstest.Eventually(t, "the crew sees server-everything's process ended", func() bool {
		var st struct {
			Servers []struct {
				Name      string
				LastEnded string `json:"last_ended"`
			}
		}
		getJSON(t, s.url+"/api/mcp", &st)
		for _, sv := range st.Servers {
			if sv.Name == "everything" && sv.LastEnded != "" {
				return true
			}
		}
		return false
	})
	if got := say("add again", "summed again", `call:mcp__everything__get-sum {"a":1,"b":2}`); !strings.Contains(got, "The sum of 1 and 2 is 3") {
		t.Errorf("get-sum after the server was killed: %q", got)
	}
	if len(processesWith("CREW_TEST_MARKER="+marker)) == 0 {
		t.Errorf("server-everything was not started again")
	}

	// The restart as the running server and doctor show it.
	var states struct {
		Servers []struct {
			Name, Transport, State string
			LastEnded              string `json:"last_ended"`
			Restarts, Tools        int
		} `json:"servers"`
	}
	getJSON(t, s.url+"/api/mcp", &states)
	byName := map[string]int{}
	for i, st := range states.Servers {
		byName[st.Name] = i
	}
	if ev := states.Servers[byName["everything"]]; len(states.Servers) != 2 || ev.State != "running" || ev.Restarts != 1 || !strings.Contains(ev.LastEnded, "signal") || ev.Tools == 0 {
		t.Errorf("GET /api/mcp = %+v, want everything running, restarted once after a signal", states.Servers)
	}
	out, _, _ = crew(t, home, "doctor")
	if !strings.Contains(out, "MCP servers (as the running crew serve has them):") || !regexp.MustCompile(`  everything \(stdio node [^\n]*\): running, \d+ tools, restarted once \(last process: ended by signal`).MatchString(out) ||
		!strings.Contains(out, "  files (stdio node ") {
		t.Errorf("doctor beside the running server:\n%s", out)
	}
}
