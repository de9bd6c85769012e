package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/loop/team/teamtest"
)

// worktreeModel is an OpenAI-compatible server playing a lead that, asked
// to "Make a worktree named <name>", creates a task for it and gives the
// task that worktree, then says what create_worktree answered.
type worktreeModel struct {
	mu   sync.Mutex
	n    int
	keys map[string]bool // the bearer keys it was called with
}

var worktreeAsked = regexp.MustCompile(`Make a worktree named (wt\d+)`)

func (m *worktreeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Content any `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", 400)
		return
	}
	last := fmt.Sprint(req.Messages[len(req.Messages)-1].Content)
	m.mu.Lock()
	m.n++
	n := m.n
	m.keys[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")] = true
	m.mu.Unlock()
	var name, args, text string
	if c := e2eCreated.FindStringSubmatch(last); c != nil {
		name, args = "create_worktree", fmt.Sprintf(`{"name":%q,"task_id":%q}`, c[2], c[1])
	} else if a := worktreeAsked.FindStringSubmatch(last); a != nil {
		name, args = "create_task", fmt.Sprintf(`{"subject":%q}`, a[1])
	} else {
		text = "create_worktree said: " + last
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if name == "" {
		b, _ := json.Marshal(text)
		fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"content":%s},"finish_reason":"stop"}]}`+"\n\n", b)
	} else {
		a, _ := json.Marshal(args)
		fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":%q,"arguments":%s}}]},"finish_reason":"tool_calls"}]}`+"\n\n", n, name, a)
	}
	fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"cost":0.0001}}`+"\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// approvalsAsked counts the approval_requested events for tool in a
// conversation's export.
func approvalsAsked(t *testing.T, url, id, tool string) int {
	t.Helper()
	resp, err := http.Get(url + "/api/conversations/" + id + "/export")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	n := 0
	for _, line := range strings.Split(string(body), "\n") {
		var l struct {
			Type string `json:"type"`
			Data struct {
				Tool string `json:"tool"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Type == "approval_requested" && l.Data.Tool == tool {
			n++
		}
	}
	return n
}

// The git attacks of issue 24 through a real crew serve, its team runtime
// and sandbox: the master's workspace is a repository whose own settings
// make git run a program (a planted hook, a filter driver in .git/config
// with .git/info/attributes, core.fsmonitor, core.sshCommand with a
// .gitmodules URL); the lead, driven over the OpenAI-compatible API,
// creates a task and a worktree for it — in a supervised conversation,
// where create_worktree asks first and nothing of the worktree exists
// while it waits, and in an autonomous one, where it runs unasked. The
// program would write a marker beside itself, outside the workspace, and
// copy <home>/env (whose API key is a canary) into it and into the
// workspace: none of that happens, and the worktree is made. Each plant
// makes the host's plain git run the program first (teamtest.Control),
// so the test can fail. One serve child for all eight.
func TestCreateWorktreeOverServeRunsNothingTheRepositoryPlants(t *testing.T) {
	canary := "sk-or-canary-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	home := initHome(t)
	f, err := os.OpenFile(filepath.Join(home, "env"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	must(t, err)
	fmt.Fprintf(f, "\nOPENROUTER_API_KEY=%s\n", canary)
	f.Close()
	payload := teamtest.Payload(t, t.TempDir())
	for _, kind := range teamtest.Kinds {
		teamtest.Control(t, kind, payload)
	}
	model := &worktreeModel{keys: map[string]bool{}}
	api := httptest.NewServer(model)
	defer api.Close()
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_BASE_URL="+api.URL+"/v1")
	ws := filepath.Join(home, "workspace")

	n := 0
	for _, seat := range []string{"supervised", "autonomous"} {
		if seat == "autonomous" {
			reloads := strings.Count(s.stderr.String(), "crew reloaded")
			autonomousMaster(t, home)
			for deadline := time.Now().Add(30 * time.Second); strings.Count(s.stderr.String(), "crew reloaded") == reloads; {
				if time.Now().After(deadline) {
					t.Fatalf("no reload within 30 s of autonomous: true\n%s", s.stderr)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		for _, kind := range teamtest.Kinds {
			n++
			name := fmt.Sprintf("wt%d", n)
			t.Run(kind+"/"+seat, func(t *testing.T) {
				// A fresh repository each time, the plant in it.
				for _, p := range []string{".git", ".worktrees", ".gitmodules", "auth.go"} {
					os.RemoveAll(filepath.Join(ws, p))
				}
				teamtest.Repo(t, ws)
				teamtest.Plant(t, ws, kind, payload)
				// A channel of its own: a conversation of its own, opened
				// supervised or autonomous as the master is now.
				_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "Make a worktree named " + name + " for a new task.", "channel": "api:" + name})
				id, _ := acc["conversation_id"].(string)
				if id == "" {
					t.Fatalf("inbound: %v", acc)
				}
				wt := filepath.Join(ws, ".worktrees", name)
				if seat == "supervised" {
					c := waitConv(t, s.url, id, "create_worktree's card", func(c convView) bool {
						return c.Status == "awaiting_approval" && len(c.PendingApprovals) == 1 && c.PendingApprovals[0].Tool == "create_worktree"
					})
					if _, err := os.Lstat(wt); err == nil {
						t.Fatal("git ran before the owner was asked")
					}
					if code, body := postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"}); code != 200 {
						t.Fatalf("approve = %d %v", code, body)
					}
				}
				c := waitConv(t, s.url, id, "the worktree made", func(c convView) bool {
					return settled(c) && strings.Contains(c.History[len(c.History)-1].Text, "create_worktree said:")
				})
				if said := c.History[len(c.History)-1].Text; !strings.Contains(said, "Created worktree "+name) {
					t.Fatalf("%s", said)
				}
				want := map[string]int{"supervised": 1, "autonomous": 0}[seat]
				if got := approvalsAsked(t, s.url, id, "create_worktree"); got != want {
					t.Errorf("create_worktree asked %d times in a %s conversation, want %d", got, seat, want)
				}
				if _, err := os.Stat(filepath.Join(wt, "auth.go")); err != nil {
					t.Fatalf("the checkout: %v", err)
				}
				teamtest.NothingRan(t, payload, ws, canary)
			})
		}
	}
	model.mu.Lock()
	used := model.keys[canary]
	model.mu.Unlock()
	if !used {
		t.Errorf("the model was called with keys %v, not <home>/env's: the canary proves nothing", model.keys)
	}
	if strings.Contains(s.stderr.String(), canary) {
		t.Error("the canary is in serve's log")
	}
	s.stop(t)
}
