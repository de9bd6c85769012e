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

	"github.com/my-agent-crew/crew/events/eventstest"
)

// teamAPI is an OpenAI-compatible server that plays a lead and its
// teammates, told apart by the seat their system prompt names.
type teamAPI struct {
	mu   sync.Mutex
	n    int
	seen map[string][]string // seat → the last message of each request
}

var (
	e2eCreated = regexp.MustCompile(`Created (task_[0-9a-f]+): (\w+)`)
	e2eTask    = regexp.MustCompile(`\[(?:Assigned|Auto-claimed) task (task_[0-9a-f]+)\] (\w+)`)
)

func (a *teamAPI) lasts(seat string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen[seat]...)
}

func (a *teamAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) < 2 {
		http.Error(w, "bad request", 400)
		return
	}
	texts := make([]string, len(req.Messages))
	for i, m := range req.Messages {
		texts[i], _ = m.Content.(string)
	}
	seat := "lead"
	if _, rest, ok := strings.Cut(texts[0], "# Your team\n\nYou are "); ok {
		seat, _, _ = strings.Cut(rest, ",")
	}
	last := texts[len(texts)-1]
	all := strings.Join(texts, "\n")
	task := func(subject string) string {
		for _, m := range e2eCreated.FindAllStringSubmatch(all, -1) {
			if m[2] == subject {
				return m[1]
			}
		}
		return ""
	}
	a.mu.Lock()
	a.n++
	n := a.n
	a.seen[seat] = append(a.seen[seat], last)
	a.mu.Unlock()

	type call struct {
		name string
		args map[string]any
	}
	var text string
	var calls []call
	switch {
	case seat == "lead" && strings.HasPrefix(last, "[Team events"):
		text = "I received the authentication result and will coordinate the rest."
	case seat == "lead" && strings.Contains(last, "Put the backend refactor"):
		calls = []call{{"propose_team", map[string]any{"plan": "config and auth in parallel, tests after both",
			"members": []map[string]string{{"name": "alice", "agent": "master", "responsibility": "config: clean up configuration loading"},
				{"name": "bob", "agent": "coder", "responsibility": "auth: refactor authentication"}}}}}
	case seat == "lead" && strings.HasPrefix(last, "The owner confirmed"):
		calls = []call{{"create_task", map[string]any{"subject": "config"}}, {"create_task", map[string]any{"subject": "auth"}},
			{"create_task", map[string]any{"subject": "tests"}}}
	case seat == "lead" && strings.HasPrefix(last, "Created task_") && !strings.Contains(all, "Updated task_"):
		calls = []call{{"update_task", map[string]any{"task_id": task("tests"), "addBlockedBy": []string{task("config"), task("auth")}}}}
	case seat == "lead" && strings.HasPrefix(last, "Updated"):
		calls = []call{{"create_worktree", map[string]any{"name": "auth-refactor", "task_id": task("auth")}}}
	case seat == "lead" && strings.HasPrefix(last, "Created worktree"):
		calls = []call{{"spawn_teammate", map[string]any{"name": "alice", "task_id": task("config")}},
			{"spawn_teammate", map[string]any{"name": "bob", "task_id": task("auth")}}}
	case seat == "lead":
		text = "The team is working; I will report back."
	case e2eTask.MatchString(last):
		m := e2eTask.FindStringSubmatch(last)
		calls = []call{{"workspace_write", map[string]any{"path": m[2] + "-by-" + seat + ".txt", "content": "done\n"}}}
	case strings.HasPrefix(last, "created "):
		var id string
		for _, m := range e2eTask.FindAllStringSubmatch(all, -1) {
			id = m[1]
		}
		calls = []call{{"complete_task", map[string]any{"task_id": id, "result": "Authentication refactored; related tests pass."}}}
	default:
		text = seat + ": done."
	}

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

type teamView struct {
	Members []struct {
		Name, State, Task, Conversation string
	} `json:"members"`
	Tasks []struct {
		ID, Subject, Status, Owner, Worktree, Branch string
		BlockedBy                                    []string `json:"blocked_by"`
	} `json:"tasks"`
	Mail []struct {
		From, To, Type, Content string
		TaskID                  string `json:"task_id"`
	} `json:"mail"`
}

// The seed's full run end to end (seed 001, "Một lần chạy hoàn chỉnh"),
// through a real crew serve and the real OpenAI-compatible client: the
// owner asks for a parallel refactor; the lead proposes and waits; the
// owner's approval is the "Go ahead"; the lead creates the tasks and links
// them, gives auth a worktree, spawns alice (config, in the repository)
// and bob (auth, in the worktree) each with its claimed task; a completion
// reaches the lead as a result then an idle notification, and the lead's
// next turn starts by itself; the teammate idle when tests becomes ready
// claims it, "[Auto-claimed task …]".
func TestTeamSeedRunOverHTTP(t *testing.T) {
	api := &teamAPI{seen: map[string][]string{}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	home := initHome(t)
	putAgent(t, home, "coder", "name: Coder\ndescription: writes code\nroutes: [fake:echo]\ntools: [workspace_read, workspace_write, workspace_list]\n",
		"CODER-PERSONA: you write code.")
	ws := filepath.Join(home, "workspace")
	os.WriteFile(filepath.Join(ws, "auth.go"), []byte("package auth\n"), 0o600)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/good", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+srv.URL+"/v1")

	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "Put the backend refactor on a shared task board. Clean up configuration, authentication, and tests in parallel where possible. Use a worktree for authentication, preserve existing interfaces, and make sure the tests pass."})
	id, _ := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "the proposal's card", func(c convView) bool { return c.Status == "awaiting_approval" })
	if len(c.PendingApprovals) != 1 || c.PendingApprovals[0].Tool != "propose_team" {
		t.Fatalf("pending = %+v", c.PendingApprovals)
	}
	var tv teamView
	if code := getJSON(t, s.url+"/api/teams/"+id, &tv); code != 404 {
		t.Fatalf("a team before the owner confirmed: %d %+v", code, tv)
	}
	if code, body := postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"}); code != 200 {
		t.Fatalf("approve = %d %v", code, body)
	}
	// create_worktree runs git in the repository the agent writes: a
	// supervised conversation asks first.
	c = waitConv(t, s.url, id, "the worktree's card", func(c convView) bool {
		return c.Status == "awaiting_approval" && len(c.PendingApprovals) == 1 && c.PendingApprovals[0].Tool == "create_worktree"
	})
	if code, body := postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"}); code != 200 {
		t.Fatalf("approve the worktree = %d %v", code, body)
	}

	eventstest.Eventually(t, "every task completed", func() bool {
		tv = teamView{}
		if getJSON(t, s.url+"/api/teams/"+id, &tv) != 200 || len(tv.Tasks) != 3 {
			return false
		}
		for _, tk := range tv.Tasks {
			if tk.Status != "completed" {
				return false
			}
		}
		return true
	})
	subject := map[string]string{}
	for _, tk := range tv.Tasks {
		subject[tk.Subject] = tk.ID
		if tk.Subject == "auth" && (tk.Worktree != "auth-refactor" || tk.Branch != "wt/auth-refactor" || tk.Owner != "bob") {
			t.Errorf("auth = %+v", tk)
		}
		if tk.Subject == "tests" && len(tk.BlockedBy) != 2 {
			t.Errorf("tests = %+v, want blocked by config and auth", tk)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, ".worktrees", "auth-refactor", "auth-by-bob.txt")); err != nil {
		t.Errorf("bob did not work in the worktree: %v\n%s", err, s.stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "config-by-alice.txt")); err != nil {
		t.Errorf("alice did not work in the repository: %v", err)
	}
	// Results then idle notifications, per teammate, in that order.
	for _, who := range []string{"alice", "bob"} {
		var types []string
		for _, m := range tv.Mail {
			if m.From == who && m.To == "lead" {
				types = append(types, m.Type)
			}
		}
		if len(types) < 2 || types[0] != "result" || types[1] != "idle_notification" {
			t.Errorf("%s → lead: %v, want result then idle_notification", who, types)
		}
	}
	// The lead's next turn was started by the team events, framed, and
	// answered without the owner saying anything.
	c = waitConv(t, s.url, id, "the lead's answer to its team", func(c convView) bool {
		return settled(c) && c.History[len(c.History)-1].Text == "I received the authentication result and will coordinate the rest."
	})
	var framed int
	for _, m := range c.History {
		if m.Role == "user" && strings.HasPrefix(m.Text, "[Team events") {
			framed++
		}
	}
	if framed == 0 {
		t.Error("no framed team events in the lead's conversation")
	}
	// The teammate idle when tests became ready claimed it by itself.
	auto := 0
	for _, who := range []string{"alice", "bob"} {
		for _, l := range api.lasts(who) {
			if strings.Contains(l, "[Auto-claimed task "+subject["tests"]+"] tests") {
				auto++
			}
		}
	}
	if auto != 1 {
		t.Errorf("tests auto-claimed %d times, want once", auto)
	}
	// The host removes the worktree, not the model: bob's file is an
	// untracked change, so it is refused until --discard; the branch stays.
	wt := filepath.Join(ws, ".worktrees", "auth-refactor")
	if _, stderr, code := crew(t, home, "team", "worktree", "remove", "auth-refactor"); code == 0 || !strings.Contains(stderr, "worktree has changes") {
		t.Errorf("remove with changes: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(wt); err != nil {
		t.Errorf("a refused removal removed the checkout: %v", err)
	}
	if out, stderr, code := crew(t, home, "team", "worktree", "remove", "auth-refactor", "--discard"); code != 0 || !strings.Contains(out, "branch wt/auth-refactor is kept") {
		t.Errorf("remove --discard: exit %d, %s %s", code, out, stderr)
	}
	if out, _ := exec.Command("git", "-C", ws, "branch", "--list", "wt/auth-refactor").Output(); !strings.Contains(string(out), "wt/auth-refactor") {
		t.Error("the branch went with the worktree")
	}
	s.stop(t)
}
