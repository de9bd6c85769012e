package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// askModel is an OpenAI-compatible server: the first turn request calls
// ask_user with choices; the next is answered with the text it was given
// as the question's result, so the test reads exactly what the model got.
type askModel struct {
	mu      sync.Mutex
	results []string // the tool message content of each request after the question
}

func (m *askModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    string `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	last := req.Messages[len(req.Messages)-1]
	if last.Role == "tool" && last.ToolCallID == "call_ask" {
		m.mu.Lock()
		m.results = append(m.results, last.Content)
		m.mu.Unlock()
		b, _ := json.Marshal("Booked: " + last.Content)
		fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"content":%s},"finish_reason":"stop"}]}`+"\n\n", b)
	} else {
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_ask","type":"function","function":{"name":"ask_user","arguments":"{\"question\":\"Which day?\",\"choices\":[\"Monday\",\"Tuesday\"]}"}}]},"finish_reason":"tool_calls"}]}`+"\n\n")
	}
	fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"cost":0.0001}}`+"\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (m *askModel) got() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.results...)
}

type questionView struct {
	Status          string `json:"status"`
	PendingQuestion *struct {
		ID        string   `json:"id"`
		Question  string   `json:"question"`
		Choices   []string `json:"choices"`
		ExpiresAt string   `json:"expires_at"`
	} `json:"pending_question"`
	ActiveRuns []string `json:"active_runs"`
}

// Seed 000 §2.4 end to end on a real crew serve: ask_user pauses the turn
// (status awaiting_answer, pending_question in the conversation's JSON and
// the list), a new message gets 409 naming the question, a restart keeps
// it, POST /api/questions/{id} answers it (400 empty, 404 unknown, 409 a
// second time), and the model's next request holds the answer as the
// call's result.
func TestAskUserAnsweredOverHTTPSurvivesRestart(t *testing.T) {
	model := &askModel{}
	api := httptest.NewServer(model)
	defer api.Close()
	home := initHome(t)
	env := []string{"MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL=" + api.URL + "/v1"}
	s := startServe(t, home, env...)
	code, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "book a table"})
	if code != 202 {
		t.Fatalf("inbound = %d %v", code, acc)
	}
	id := acc["conversation_id"].(string)
	var c questionView
	waitConv(t, s.url, id, "awaiting an answer", func(convView) bool {
		getJSON(t, s.url+"/api/conversations/"+id, &c)
		return c.Status == "awaiting_answer"
	})
	q := c.PendingQuestion
	if q == nil || q.Question != "Which day?" || strings.Join(q.Choices, ",") != "Monday,Tuesday" || q.ExpiresAt == "" || q.ID == "" {
		t.Fatalf("pending_question = %+v", q)
	}
	var list []questionView
	getJSON(t, s.url+"/api/conversations", &list)
	if len(list) != 1 || list[0].Status != "awaiting_answer" || list[0].PendingQuestion == nil || list[0].PendingQuestion.ID != q.ID {
		t.Errorf("list = %+v, want the conversation awaiting the answer", list)
	}
	code, body := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "hello?", "conversation_id": id})
	if ec, msg := errorOf(body); code != 409 || ec != "awaiting_answer" || !strings.Contains(msg, q.ID) || !strings.Contains(msg, "Which day?") {
		t.Errorf("message while awaiting an answer = %d %v, want 409 awaiting_answer naming the question", code, body)
	}

	s.stop(t)
	s = startServe(t, home, env...)
	c = questionView{}
	getJSON(t, s.url+"/api/conversations/"+id, &c)
	if c.Status != "awaiting_answer" || c.PendingQuestion == nil || c.PendingQuestion.ID != q.ID {
		t.Fatalf("after a restart: %+v, want the same question waiting", c)
	}
	for _, bad := range []map[string]any{{"answer": ""}, {"answer": strings.Repeat("x", 9000)}, {}, {"answer": "x", "extra": 1}} {
		if code, body := postJSON(t, s.url+"/api/questions/"+q.ID, bad); code != 400 {
			t.Errorf("answer %v = %d %v, want 400", bad, code, body)
		}
	}
	if code, body := postJSON(t, s.url+"/api/questions/nosuch", map[string]any{"answer": "x"}); code != 404 || errCode(body) != "not_found" {
		t.Errorf("unknown question = %d %v, want 404", code, body)
	}
	if code, body := postJSON(t, s.url+"/api/questions/"+q.ID, map[string]any{"answer": "Tuesday at 8"}); code != 200 {
		t.Fatalf("answer = %d %v", code, body)
	}
	if code, body := postJSON(t, s.url+"/api/questions/"+q.ID, map[string]any{"answer": "Monday"}); code != 409 || errCode(body) != "already_answered" {
		t.Errorf("second answer = %d %v, want 409 already_answered", code, body)
	}
	done := waitConv(t, s.url, id, "idle", settled)
	if got := model.got(); len(got) != 1 || got[0] != "Tuesday at 8" {
		t.Errorf("the model was given %q as the question's result, want the answer once", got)
	}
	if last := done.History[len(done.History)-1]; last.Text != "Booked: Tuesday at 8" {
		t.Errorf("last message = %+v", last)
	}
	c = questionView{}
	getJSON(t, s.url+"/api/conversations/"+id, &c)
	if c.PendingQuestion != nil || c.Status != "idle" {
		t.Errorf("after the answer: %+v", c)
	}
	s.stop(t)
}

// errorOf is the code and message of a JSON error body.
func errorOf(body map[string]any) (code, message string) {
	e, _ := body["error"].(map[string]any)
	code, _ = e["code"].(string)
	message, _ = e["message"].(string)
	return code, message
}

func errCode(body map[string]any) string { c, _ := errorOf(body); return c }
