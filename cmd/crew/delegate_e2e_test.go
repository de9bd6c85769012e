package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// scriptedCrewAPI is an OpenAI-compatible server that plays the master and
// the agents it delegates to, told apart by the persona in the system
// prompt; it keeps what each agent was sent.
type scriptedCrewAPI struct {
	mu   sync.Mutex
	sent map[string][]string // persona → each request's messages, as JSON
}

func (a *scriptedCrewAPI) requests(persona string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.sent[persona]...)
}

func (a *scriptedCrewAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) < 2 {
		http.Error(w, "bad request", 400)
		return
	}
	system, _ := req.Messages[0]["content"].(string)
	last := req.Messages[len(req.Messages)-1]
	content, _ := last["content"].(string)
	persona := "master"
	for _, p := range []string{"HEALTH-COACH-PERSONA", "LEDGER-PERSONA"} {
		if strings.Contains(system, p) {
			persona = p
		}
	}
	all, _ := json.Marshal(req.Messages)
	a.mu.Lock()
	a.sent[persona] = append(a.sent[persona], string(all))
	a.mu.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	say := func(text string) {
		chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": text}, "finish_reason": "stop"}}})
	}
	delegate := func(id, agent, task string) {
		args, _ := json.Marshal(map[string]string{"agent": agent, "task": task})
		chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "delta": map[string]any{"tool_calls": []any{
			map[string]any{"index": 0, "id": id, "type": "function", "function": map[string]any{"name": "delegate", "arguments": string(args)}},
		}}}}})
	}
	usage := 0.001
	switch {
	case persona == "HEALTH-COACH-PERSONA":
		say("Oats with banana, two hours before the run.")
		usage = 0.002
	case persona != "master":
		say("The ledger should never be reached.")
	case last["role"] == "tool" && strings.Contains(content, "Oats"):
		say("The coach says: oats.")
	case last["role"] == "tool":
		say("I may not ask the ledger.")
	case strings.Contains(content, "breakfast"):
		delegate("call_dlg1", "health-coach", "Suggest a vegetarian breakfast for two hours before a 10k run.")
	default:
		delegate("call_dlg2", "ledger", "What is the owner's balance?")
	}
	chunk(map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": 12, "completion_tokens": 3, "cost": usage}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// putAgent puts an agent folder in the home (replacing an example of the
// same name).
func putAgent(t *testing.T, home, id, yaml, persona string) {
	t.Helper()
	dir := filepath.Join(home, "agents", id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"agent.yaml": yaml, "AGENTS.md": persona} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

type delegateRun struct {
	RunID       string `json:"run_id"`
	Agent       string `json:"agent"`
	Trigger     string `json:"trigger"`
	ParentRunID string `json:"parent_run_id"`
	Status      string `json:"status"`
	Totals      struct {
		CostUSD          float64 `json:"cost_usd"`
		DelegatedCostUSD float64 `json:"delegated_cost_usd"`
	} `json:"totals"`
	Children []struct {
		RunID string `json:"run_id"`
	} `json:"children"`
	Steps []struct {
		ToolCalls []struct {
			Tool     string `json:"tool"`
			Delegate *struct {
				Agent        string       `json:"agent"`
				Conversation string       `json:"conversation"`
				RunID        string       `json:"run_id"`
				Status       string       `json:"status"`
				CostUSD      *float64     `json:"cost_usd"`
				Run          *delegateRun `json:"run"`
			} `json:"delegate"`
		} `json:"tool_calls"`
	} `json:"steps"`
}

// R-DEL end to end through crew serve and the real OpenAI-compatible
// client: the master delegates to health-coach, which answers from the
// brief alone; the child run nests under the master's in /api/runs/{id};
// the master's cost includes the child's; a delegate to ledger (not in
// delegates:) is refused and the refusal is the tool result.
func TestDelegateOverHTTP(t *testing.T) {
	api := &scriptedCrewAPI{sent: map[string][]string{}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	home := initHome(t)
	cfg := filepath.Join(home, "agent.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(b, "\ndelegates: [health-coach]\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	putAgent(t, home, "health-coach", "name: Health coach\ndescription: meals and training\nroutes: [fake:echo]\ntools: [workspace_read, progress_note]\n",
		"HEALTH-COACH-PERSONA: you are the owner's health coach.")
	putAgent(t, home, "ledger", "name: Ledger\ndescription: money\nroutes: [fake:echo]\ntools: [workspace_read]\n",
		"LEDGER-PERSONA: you keep the owner's accounts.")
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/good",
		"OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+srv.URL+"/v1")

	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "What breakfast before my run? SECRET-MASTER-WORDS"})
	id, _ := acc["conversation_id"].(string)
	if id == "" {
		t.Fatalf("inbound: %v", acc)
	}
	c := waitConv(t, s.url, id, "answered", func(c convView) bool {
		return settled(c) && c.History[len(c.History)-1].Text == "The coach says: oats."
	})
	var result string
	for _, m := range c.History {
		if m.Role == "tool" {
			result = m.Text
		}
	}
	if result != "Oats with banana, two hours before the run." {
		t.Errorf("the delegate's result = %q\n%s", result, s.stderr)
	}
	// The child saw the brief, never the master's chat.
	coach := api.requests("HEALTH-COACH-PERSONA")
	if len(coach) != 1 || !strings.Contains(coach[0], "Suggest a vegetarian breakfast for two hours before a 10k run.") || strings.Contains(coach[0], "SECRET-MASTER-WORDS") {
		t.Errorf("the coach was sent %q", coach)
	}

	// The runs projection follows the log on its own consumer: wait until
	// it has the run whole (finished, the delegate call with its child).
	var runs []delegateRun
	var run delegateRun
	eventstest.Eventually(t, "the run projected whole", func() bool {
		runs, run = nil, delegateRun{}
		if getJSON(t, s.url+"/api/conversations/"+id+"/runs", &runs) != 200 || len(runs) != 1 {
			return false
		}
		if getJSON(t, s.url+"/api/runs/"+runs[0].RunID, &run) != 200 || run.Status != "done" {
			return false
		}
		for _, st := range run.Steps {
			for _, tc := range st.ToolCalls {
				if tc.Delegate != nil && tc.Delegate.Run != nil && tc.Delegate.Run.Status == "done" {
					return true
				}
			}
		}
		return false
	})
	var child *delegateRun
	var childCost *float64
	for _, st := range run.Steps {
		for _, tc := range st.ToolCalls {
			if tc.Delegate != nil {
				child, childCost = tc.Delegate.Run, tc.Delegate.CostUSD
				if tc.Delegate.Agent != "health-coach" || tc.Delegate.Status != "done" || tc.Delegate.Conversation == "" {
					t.Errorf("delegate call = %+v", tc.Delegate)
				}
			}
		}
	}
	if child == nil || child.Agent != "health-coach" || child.ParentRunID != run.RunID || child.Trigger != "delegate" || len(child.Steps) == 0 {
		t.Fatalf("the child run is not nested under the delegate call: %+v", child)
	}
	if len(run.Children) != 1 || run.Children[0].RunID != child.RunID {
		t.Errorf("children = %+v, want %s", run.Children, child.RunID)
	}
	// Cost summed: the master's two calls and the child's one.
	if childCost == nil || math.Abs(*childCost-0.002) > 1e-9 || math.Abs(child.Totals.CostUSD-0.002) > 1e-9 ||
		math.Abs(run.Totals.CostUSD-0.004) > 1e-9 || math.Abs(run.Totals.DelegatedCostUSD-0.002) > 1e-9 {
		t.Errorf("costs: parent %+v, child %+v, delegate %v; want 0.004 with the child's 0.002", run.Totals, child.Totals, childCost)
	}

	// ledger is not in the master's delegates: refused, and the refusal is
	// the tool result the master answers from.
	postJSON(t, s.url+"/api/inbound", map[string]any{"text": "ask the ledger for my balance", "conversation_id": id})
	c = waitConv(t, s.url, id, "answered again", func(c convView) bool {
		return settled(c) && c.History[len(c.History)-1].Text == "I may not ask the ledger."
	})
	refusal := c.History[len(c.History)-2]
	if refusal.Role != "tool" || !refusal.IsError || !strings.Contains(refusal.Text, `you may not delegate to "ledger"`) || !strings.Contains(refusal.Text, "health-coach") {
		t.Errorf("refusal = %+v", refusal)
	}
	if n := len(api.requests("LEDGER-PERSONA")); n != 0 {
		t.Errorf("the ledger was called %d times", n)
	}
	s.stop(t)
}
