package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// boardRequest is one chat completion request as a scripted seat reads
// it: its seat, its texts, and the tools its assistant already called.
type boardRequest struct {
	seat   string
	texts  []string
	called []string // tool names, in order, over the whole conversation
	last   string
	all    string
}

func (q boardRequest) count(tool string) int {
	n := 0
	for _, c := range q.called {
		if c == tool {
			n++
		}
	}
	return n
}

func parseBoardRequest(r *http.Request) (boardRequest, error) {
	var req struct {
		Messages []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) < 2 {
		return boardRequest{}, fmt.Errorf("bad request: %v", err)
	}
	var q boardRequest
	for _, m := range req.Messages {
		var text string
		if json.Unmarshal(m.Content, &text) != nil {
			var parts []struct {
				Text string `json:"text"`
			}
			json.Unmarshal(m.Content, &parts)
			for _, p := range parts {
				text += p.Text
			}
		}
		q.texts = append(q.texts, text)
		for _, c := range m.ToolCalls {
			q.called = append(q.called, c.Function.Name)
		}
	}
	q.seat = "lead"
	if _, rest, ok := strings.Cut(q.texts[0], "# Your team\n\nYou are "); ok {
		q.seat, _, _ = strings.Cut(rest, ",")
	}
	q.last = q.texts[len(q.texts)-1]
	q.all = strings.Join(q.texts, "\n")
	return q, nil
}

type boardCall struct {
	name string
	args map[string]any
}

// streamReply writes one streamed reply: text, or tool calls.
func streamReply(w http.ResponseWriter, n int, text string, calls []boardCall) {
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	if len(calls) == 0 {
		chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": text}, "finish_reason": "stop"}}})
	} else {
		var tcs []any
		for i, c := range calls {
			args, _ := json.Marshal(c.args)
			tcs = append(tcs, map[string]any{"index": i, "id": fmt.Sprintf("call_%d_%d", n, i), "type": "function",
				"function": map[string]any{"name": c.name, "arguments": string(args)}})
		}
		chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "delta": map[string]any{"tool_calls": tcs}}}})
	}
	chunk(map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": 12, "completion_tokens": 3, "cost": 0.0001}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

var (
	boardAssigned = regexp.MustCompile(`\[Assigned task (task_[0-9a-f]+)\] (\w+)`)
	boardReady    = regexp.MustCompile(`(task_[0-9a-f]+) \[pending\] tests — ready`)
)

// boardAPI plays the seed's lead, alice and bob (seed 001 "Một lần chạy
// hoàn chỉnh", the team parts of seed 004), each from what its own
// conversation shows; bob waits, inside his turn, for what the others do
// (read through the server's HTTP API), so the order is the scenario's.
type boardAPI struct {
	t    *testing.T
	url  func() string
	team func() string
	mu   sync.Mutex
	n    int
}

// teamNow is the team as the API shows it now.
func (a *boardAPI) teamNow() teamView {
	var tv teamView
	if id := a.team(); id != "" {
		resp, err := http.Get(a.url() + "/api/teams/" + id)
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&tv)
			resp.Body.Close()
		}
	}
	return tv
}

// waitTeam waits (bounded) until ok holds of the team.
func (a *boardAPI) waitTeam(what string, ok func(teamView) bool) {
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if ok(a.teamNow()) {
			return
		}
	}
	a.t.Errorf("scripted model: waited 60 s for %s", what)
}

func (a *boardAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q, err := parseBoardRequest(r)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	a.mu.Lock()
	a.n++
	n := a.n
	a.mu.Unlock()
	var text string
	var calls []boardCall
	switch q.seat {
	case "lead":
		text, calls = a.lead(q)
	case "alice":
		text, calls = a.alice(q)
	default:
		text, calls = a.bob(q)
	}
	streamReply(w, n, text, calls)
}

func (a *boardAPI) lead(q boardRequest) (string, []boardCall) {
	task := func(subject string) string {
		for _, m := range e2eCreated.FindAllStringSubmatch(q.all, -1) {
			if m[2] == subject {
				return m[1]
			}
		}
		return ""
	}
	asked := func(name string) bool { return strings.Contains(q.all, "Asked "+name+" to shut down") }
	switch {
	case strings.Contains(q.last, "Put the backend refactor"):
		return "", []boardCall{{"propose_team", map[string]any{"plan": "config and auth in parallel, tests after both",
			"members": []map[string]string{{"name": "alice", "agent": "master", "responsibility": "config: clean up configuration loading"},
				{"name": "bob", "agent": "coder", "responsibility": "auth: refactor authentication"}}}}}
	case strings.HasPrefix(q.last, "The owner confirmed"):
		return "", []boardCall{{"create_task", map[string]any{"subject": "config"}}, {"create_task", map[string]any{"subject": "auth"}},
			{"create_task", map[string]any{"subject": "tests"}}}
	case strings.HasPrefix(q.last, "Created task_") && q.count("update_task") == 0:
		return "", []boardCall{{"update_task", map[string]any{"task_id": task("tests"), "addBlockedBy": []string{task("config"), task("auth")}}}}
	case strings.HasPrefix(q.last, "Updated") && q.count("create_worktree") == 0:
		return "", []boardCall{{"create_worktree", map[string]any{"name": "auth-refactor", "task_id": task("auth")}}}
	case strings.HasPrefix(q.last, "Created worktree"):
		return "", []boardCall{{"spawn_teammate", map[string]any{"name": "alice", "task_id": task("config")}},
			{"spawn_teammate", map[string]any{"name": "bob", "task_id": task("auth")}}}
	case strings.Contains(q.last, "[Team events") && strings.Contains(q.last, "from alice (result") && !asked("alice"):
		return "", []boardCall{{"request_shutdown", map[string]any{"name": "alice", "reason": "config is done"}}}
	case strings.Contains(q.last, "[Team events") && strings.Contains(q.all, "from bob (result, task "+task("tests")) && !asked("bob"):
		return "", []boardCall{{"request_shutdown", map[string]any{"name": "bob", "reason": "the board is done"}}}
	case len(q.called) > 0 && q.called[len(q.called)-1] == "request_shutdown" && !strings.Contains(q.last, "[Team events"):
		if asked("alice") {
			return "I received the authentication result and will coordinate the rest. Asked bob to shut down.", nil
		}
		return "Asked alice to shut down: configuration is done.", nil
	case strings.Contains(q.last, "[Team events"):
		return "Noted.", nil
	}
	return "The team is working; I will report back.", nil
}

func (a *boardAPI) alice(q boardRequest) (string, []boardCall) {
	m := boardAssigned.FindStringSubmatch(q.all)
	if m == nil {
		return "alice: waiting for my task.", nil
	}
	task := m[1]
	switch {
	case q.count("list_tasks") == 0:
		return "", []boardCall{{"list_tasks", map[string]any{}}}
	case q.count("get_task") == 0:
		return "", []boardCall{{"get_task", map[string]any{"task_id": task}}}
	case q.count("list_teammates") == 0:
		return "", []boardCall{{"list_teammates", map[string]any{}}}
	case q.count("workspace_write") == 0:
		return "", []boardCall{{"workspace_write", map[string]any{"path": "config-by-alice.txt", "content": "config.Load kept\n"}}}
	case !strings.Contains(q.all, "from bob (message): bob: on auth"):
		a.waitMail("bob", "alice")
		return "", []boardCall{{"workspace_list", map[string]any{"path": "."}}}
	case q.count("complete_task") == 0:
		return "", []boardCall{{"complete_task", map[string]any{"task_id": task, "result": "Configuration loading cleaned up; config.Load kept."}}}
	case q.count("send_message") == 0:
		return "", []boardCall{{"send_message", map[string]any{"to": "bob", "content": "config is done: keep calling config.Load"}}}
	}
	return "alice: config done.", nil
}

// waitMail waits for mail from one member to another, then a moment for
// the runtime's pass to steer it into the running turn.
func (a *boardAPI) waitMail(from, to string) {
	a.waitTeam(from+"'s mail to "+to, func(tv teamView) bool {
		for _, ml := range tv.Mail {
			if ml.From == from && ml.To == to && ml.Type == "message" {
				return true
			}
		}
		return false
	})
	time.Sleep(300 * time.Millisecond)
}

func (a *boardAPI) bob(q boardRequest) (string, []boardCall) {
	m := boardAssigned.FindStringSubmatch(q.all)
	if m == nil {
		return "bob: waiting for my task.", nil
	}
	auth := m[1]
	sawMail := strings.Contains(q.all, "from alice (message): config is done")
	switch {
	case q.count("list_tasks") == 0:
		return "", []boardCall{{"list_tasks", map[string]any{}}}
	case q.count("send_message") == 0:
		return "", []boardCall{{"send_message", map[string]any{"to": "lead", "content": "bob: on auth in the worktree; building on alice's config work"}}}
	case q.count("send_message") == 1:
		return "", []boardCall{{"send_message", map[string]any{"to": "alice", "content": "bob: on auth; tell me when config is done"}}}
	case !sawMail:
		// Alice's mail is steered into this turn once it is sent: wait for
		// it, then take one more step so the next call reads it.
		a.waitMail("alice", "bob")
		return "", []boardCall{{"workspace_list", map[string]any{"path": "."}}}
	case q.count("workspace_write") == 0:
		// tests becomes ready when auth completes: alice is stopped by
		// then, so bob claims it himself.
		a.waitTeam("alice stopped", func(tv teamView) bool {
			for _, mb := range tv.Members {
				if mb.Name == "alice" && mb.State == "STOPPED" {
					return true
				}
			}
			return false
		})
		return "", []boardCall{{"workspace_write", map[string]any{"path": "auth-by-bob.txt", "content": "refactored\n"}}}
	case q.count("complete_task") == 0:
		return "", []boardCall{{"complete_task", map[string]any{"task_id": auth, "result": "Authentication refactored; interfaces preserved."}}}
	case q.count("list_tasks") == 1:
		return "", []boardCall{{"list_tasks", map[string]any{}}}
	case q.count("claim_task") == 0:
		id := ""
		if m := boardReady.FindAllStringSubmatch(q.all, -1); len(m) > 0 {
			id = m[len(m)-1][1]
		}
		return "", []boardCall{{"claim_task", map[string]any{"task_id": id}}}
	case q.count("complete_task") == 1:
		var tests string
		if m := boardReady.FindAllStringSubmatch(q.all, -1); len(m) > 0 {
			tests = m[len(m)-1][1]
		}
		return "", []boardCall{{"complete_task", map[string]any{"task_id": tests, "result": "Tests pass against the refactored auth."}}}
	}
	return "bob: auth and tests done.", nil
}

// The seed's team scenario through a real crew serve, with the teammates
// working the board and the mail themselves (seed 001 "Một lần chạy hoàn
// chỉnh", seed 004 "Subagent và Teams"): the lead proposes, the owner
// approves, the lead creates the tasks and links them, gives auth a
// worktree (asked), and spawns alice (config) and bob (auth). alice reads
// the board (list_tasks, get_task, list_teammates) and writes; bob tells
// the lead and alice what he is on; alice reads bob's mail inside her
// running turn, completes and tells bob, who reads it inside his; the lead
// gets alice's result and asks her to shut down;
// bob completes auth, claims the now-ready tests task with claim_task and
// completes it; the lead gets both results and asks bob to shut down. Every
// teammate tool answers as a member's, the mail and the board are the
// events and the HTTP API's.
func TestTeamSeedScenarioTeammatesUseBoardAndMailOverServe(t *testing.T) {
	var s *server
	var leadID string
	var idMu sync.Mutex
	api := &boardAPI{t: t,
		url:  func() string { return s.url },
		team: func() string { idMu.Lock(); defer idMu.Unlock(); return leadID }}
	srv := httptest.NewServer(api)
	defer srv.Close()
	home := initHome(t)
	natsURL := enableNATSListen(t, home)
	putAgent(t, home, "coder", "name: Coder\ndescription: writes code\nroutes: [fake:echo]\ntools: [workspace_read, workspace_write, workspace_list]\n",
		"CODER-PERSONA: you write code.")
	ws := filepath.Join(home, "workspace")
	os.WriteFile(filepath.Join(ws, "auth.go"), []byte("package auth\n"), 0o600)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	s = startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/good", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+srv.URL+"/v1")

	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "Put the backend refactor on a shared task board. Clean up configuration, authentication, and tests in parallel where possible. Use a worktree for authentication, preserve existing interfaces, and make sure the tests pass."})
	id, _ := acc["conversation_id"].(string)
	idMu.Lock()
	leadID = id
	idMu.Unlock()
	c := waitConv(t, s.url, id, "the proposal's card", func(c convView) bool { return c.Status == "awaiting_approval" })
	if code, body := postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"}); code != 200 {
		t.Fatalf("approve = %d %v", code, body)
	}
	c = waitConv(t, s.url, id, "the worktree's card", func(c convView) bool {
		return c.Status == "awaiting_approval" && len(c.PendingApprovals) == 1 && c.PendingApprovals[0].Tool == "create_worktree"
	})
	if code, body := postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"}); code != 200 {
		t.Fatalf("approve the worktree = %d %v", code, body)
	}

	// The end: both teammates stopped at the lead's request, every task
	// completed, and the lead settled after reading bob's shutdown answer.
	var tv teamView
	eventstest.EventuallyWithin(t, 3*time.Minute, "both teammates stopped and the board done", func() bool {
		tv = teamView{}
		if getJSON(t, s.url+"/api/teams/"+id, &tv) != 200 || len(tv.Tasks) != 3 || len(tv.Members) != 2 {
			return false
		}
		for _, tk := range tv.Tasks {
			if tk.Status != "completed" {
				return false
			}
		}
		for _, m := range tv.Members {
			if m.State != "STOPPED" {
				return false
			}
		}
		return true
	})
	c = waitConv(t, s.url, id, "the lead to read bob's shutdown answer", func(c convView) bool {
		return settled(c) && strings.Contains(c.History[len(c.History)-2].Text, "from bob (shutdown_response")
	})

	// The mail's fold may lag the board's a moment: read the team again.
	tv = teamView{}
	getJSON(t, s.url+"/api/teams/"+id, &tv)
	// The board: who did what, and how they got it.
	owner := map[string]string{}
	subject := map[string]string{}
	for _, tk := range tv.Tasks {
		owner[tk.Subject], subject[tk.ID] = tk.Owner, tk.Subject
	}
	if owner["config"] != "alice" || owner["auth"] != "bob" || owner["tests"] != "bob" {
		t.Errorf("owners = %v; want config alice, auth and tests bob", owner)
	}
	if _, err := os.Stat(filepath.Join(ws, ".worktrees", "auth-refactor", "auth-by-bob.txt")); err != nil {
		t.Errorf("bob did not work in the worktree: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "config-by-alice.txt")); err != nil {
		t.Errorf("alice did not work in the repository: %v", err)
	}

	// The mail, as the API shows it: the teammates wrote to each other and
	// to the lead; each completed task reached the lead as a result; both
	// shutdowns were requested and approved.
	type key struct{ from, to, typ, subject string }
	mail := map[key]int{}
	for _, m := range tv.Mail {
		mail[key{m.From, m.To, m.Type, subject[m.TaskID]}]++
	}
	for _, k := range []key{
		{"alice", "bob", "message", ""}, {"bob", "alice", "message", ""}, {"bob", "lead", "message", ""},
		{"alice", "lead", "result", "config"}, {"bob", "lead", "result", "auth"}, {"bob", "lead", "result", "tests"},
		{"lead", "alice", "shutdown_request", ""}, {"lead", "bob", "shutdown_request", ""},
		{"alice", "lead", "shutdown_response", ""}, {"bob", "lead", "shutdown_response", ""},
	} {
		if mail[k] != 1 {
			t.Errorf("mail %+v: %d, want 1 (all: %v)", k, mail[k], mail)
		}
	}

	// The events: every teammate tool ran as a member's; bob claimed tests
	// himself; alice's mail reached bob's running turn as a team steer.
	log, _ := connectLog(t, natsURL)
	aliceConv, bobConv := id+"-t-alice", id+"-t-bob"
	results := map[string][]*events.ToolCompleted{}
	steered := map[string]bool{}
	runs := map[string]map[string]bool{}
	for _, conv := range []string{aliceConv, bobConv} {
		envs, err := log.ReadAll(t.Context(), events.Conv(conv).Filter(), 0)
		if err != nil {
			t.Fatal(err)
		}
		runs[conv] = map[string]bool{}
		for _, env := range envs {
			e, _ := env.Decode()
			switch e := e.(type) {
			case *events.ToolCompleted:
				results[conv] = append(results[conv], e)
				runs[conv][e.RunID] = true
			case *events.SteerReceived:
				if e.Team != nil && (strings.Contains(e.Text, "config is done") || strings.Contains(e.Text, "tell me when")) {
					steered[conv] = true
				}
			}
		}
	}
	used := map[string]bool{}
	for conv, rs := range results {
		for _, r := range rs {
			used[r.Tool] = true
			if r.IsError || strings.Contains(r.Output, "not on a team") || strings.Contains(r.Output, "Not run") {
				t.Errorf("%s's %s: %q", conv, r.Tool, r.Output)
			}
		}
	}
	for _, tool := range []string{"list_tasks", "get_task", "list_teammates", "claim_task", "complete_task", "send_message", "workspace_write"} {
		if !used[tool] {
			t.Errorf("no teammate called %s", tool)
		}
	}
	if !steered[aliceConv] || !steered[bobConv] {
		t.Errorf("mail steered into the running turn: alice's %v, bob's %v", steered[aliceConv], steered[bobConv])
	}
	for _, conv := range []string{aliceConv, bobConv} {
		if len(runs[conv]) != 1 {
			t.Errorf("%s worked in %d runs, want 1 (mail read inside the running turn)", conv, len(runs[conv]))
		}
	}
	var claims []string
	envs, err := log.ReadAll(t.Context(), events.Team(id).Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	stopped := 0
	for _, env := range envs {
		e, _ := env.Decode()
		switch e := e.(type) {
		case *events.TaskClaimed:
			claims = append(claims, e.Owner+" "+subject[e.TaskID]+" "+e.How)
		case *events.TeammateStopped:
			stopped++
		}
	}
	if strings.Join(claims, ", ") != "alice config spawn, bob auth spawn, bob tests claim" {
		t.Errorf("claims = %v", claims)
	}
	if stopped != 2 {
		t.Errorf("%d teammate_stopped, want 2", stopped)
	}

	// The lead read its team's events framed, never as the owner, and said
	// the seed's line when bob's results came.
	var framed, line bool
	for _, m := range c.History {
		if m.Role == "user" && strings.HasPrefix(m.Text, "[Team events") && strings.Contains(m.Text, "from bob (result") {
			framed = true
		}
		if m.Role == "assistant" && strings.HasPrefix(m.Text, "I received the authentication result and will coordinate the rest.") {
			line = true
		}
	}
	if !framed || !line {
		t.Errorf("lead: bob's results framed %v, the seed's answer %v", framed, line)
	}
	s.stop(t)
}
