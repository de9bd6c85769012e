package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// usageEmulator is an OpenAI-compatible /chat/completions endpoint (the
// OpenRouter and the Ollama API shape alike) that answers each request with
// the next scripted text and usage block, and keeps every request body.
type usageEmulator struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
	// reply is the text and the usage JSON of request n (from 0).
	reply func(n int) (text, usage string)
}

func newUsageEmulator(t *testing.T, reply func(n int) (string, string)) *usageEmulator {
	t.Helper()
	e := &usageEmulator{reply: reply}
	e.Server = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.Close)
	return e
}

func (e *usageEmulator) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/api/tags" {
		io.WriteString(w, `{"models":[{"name":"llama3.2"}]}`)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	json.Unmarshal(raw, &body)
	e.mu.Lock()
	n := len(e.bodies)
	e.bodies = append(e.bodies, body)
	e.mu.Unlock()
	text, usage := e.reply(n)
	w.Header().Set("Content-Type", "text/event-stream")
	b, _ := json.Marshal(text)
	fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%s}}]}\n\n", b)
	fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":%s}\n\n", usage)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (e *usageEmulator) requests() []map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]map[string]any(nil), e.bodies...)
}

// cacheMark is the cache_control of a message's last content part, "" when
// its content is plain text or unmarked.
func cacheMark(m any) string {
	parts, ok := m.(map[string]any)["content"].([]any)
	if !ok || len(parts) == 0 {
		return ""
	}
	cc, _ := parts[len(parts)-1].(map[string]any)["cache_control"].(map[string]any)
	s, _ := cc["type"].(string)
	return s
}

// Prompt caching end to end on a real crew serve with an Anthropic model
// through an OpenRouter emulator: every request marks the system prompt
// and the previous step's last message with cache_control ephemeral (and
// nothing else); the usage blocks' cached and written tokens are recorded
// on model_called, priced from the catalog, and /api/usage, the /usage page
// ("saved by cache") and the run show them.
func TestPromptCachingBreakpointsAndSavingsThroughServe(t *testing.T) {
	api := newUsageEmulator(t, func(n int) (string, string) {
		if n == 0 {
			return "chào bạn", `{"prompt_tokens":2000,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":0,"cache_write_tokens":1800}}`
		}
		return "lại chào", `{"prompt_tokens":2100,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":1800}}`
	})
	home := initHome(t)
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:anthropic/claude-sonnet-4", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+api.URL+"/v1")
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "xin chào"})
	id := acc["conversation_id"].(string)
	waitConv(t, s.url, id, "answered", settled)
	postJSON(t, s.url+"/api/inbound", map[string]any{"text": "lần nữa", "conversation_id": id})
	waitConv(t, s.url, id, "answered twice", func(c convView) bool { return settled(c) && len(c.History) == 4 })

	reqs := api.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, req := range reqs {
		msgs := req["messages"].([]any)
		var marked []int
		for j, m := range msgs {
			if cacheMark(m) == "ephemeral" {
				marked = append(marked, j)
			}
		}
		want := []int{0}
		if i == 1 {
			want = []int{0, 2} // the system prompt, the previous step's reply
		}
		if fmt.Sprint(marked) != fmt.Sprint(want) {
			b, _ := json.Marshal(msgs)
			t.Errorf("request %d: cache_control on messages %v, want %v:\n%s", i, marked, want, b)
		}
	}
	// Sonnet: $3 in, $15 out; cache reads 0.1×, writes 1.25× the input price.
	wantCost := (200*3+1800*3.75+10*15)/1e6 + (300*3+1800*0.3+10*15)/1e6
	wantSaved := (1800*(3-0.3) - 1800*(3.75-3)) / 1e6
	var rep struct {
		TotalUSD          float64 `json:"total_usd"`
		CachedInputTokens int     `json:"cached_input_tokens"`
		CacheSavedUSD     float64 `json:"cache_saved_usd"`
		Groups            []struct {
			Key               string  `json:"key"`
			CachedInputTokens int     `json:"cached_input_tokens"`
			CacheSavedUSD     float64 `json:"cache_saved_usd"`
		} `json:"groups"`
	}
	if code := getJSON(t, s.url+"/api/usage?group_by=route", &rep); code != 200 || len(rep.Groups) != 1 ||
		rep.Groups[0].CachedInputTokens != 1800 || math.Abs(rep.Groups[0].CacheSavedUSD-wantSaved) > 1e-9 ||
		math.Abs(rep.TotalUSD-wantCost) > 1e-9 || math.Abs(rep.CacheSavedUSD-wantSaved) > 1e-9 {
		t.Errorf("/api/usage = %d %+v; want 1800 cached tokens, $%v saved, $%v spent", code, rep, wantSaved, wantCost)
	}
	if page := getPage(t, s.url+"/usage"); !strings.Contains(page, fmt.Sprintf("saved by cache: $%.4f", wantSaved)) {
		t.Errorf("/usage does not say what the cache saved ($%.4f)", wantSaved)
	}
	runs := finishedRuns(t, s.url, id, 2)
	var run struct {
		Totals struct {
			CachedInputTokens int `json:"cached_input_tokens"`
		} `json:"totals"`
	}
	getJSON(t, s.url+"/api/runs/"+runs[1].RunID, &run)
	if run.Totals.CachedInputTokens != 1800 {
		t.Errorf("second run's totals %+v, want 1800 cached input tokens", run.Totals)
	}
	s.stop(t)
}

// A conversation on a local Ollama route is free: 40 model calls finish
// under the default budget (an unknown price held $0.05 a call and
// stopped it near the tenth), and every request sends options.num_ctx,
// the route's window from models:, so Ollama keeps what compaction keeps.
func TestOllamaRouteFreeAndSendsNumCtxThroughServe(t *testing.T) {
	api := newUsageEmulator(t, func(n int) (string, string) {
		return fmt.Sprintf("trả lời %d", n), `{"prompt_tokens":300,"completion_tokens":5}`
	})
	home := initHome(t)
	cfg := filepath.Join(home, "config.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(cfg, append(b, "\nmodels:\n  ollama:llama3.2: {context_window: 16384}\n"...), 0o600)
	s := startServe(t, home, "MY_AGENT_ROUTES=ollama:llama3.2", "OLLAMA_HOST="+api.URL)
	const calls = 40
	id := ""
	for i := range calls {
		body := map[string]any{"text": fmt.Sprintf("câu %d", i)}
		if id != "" {
			body["conversation_id"] = id
		}
		code, acc := postJSON(t, s.url+"/api/inbound", body)
		if code != 202 {
			t.Fatalf("message %d: %d %v", i, code, acc)
		}
		id = acc["conversation_id"].(string)
		want := 2 * (i + 1)
		c := waitConv(t, s.url, id, fmt.Sprintf("answer %d", i), func(c convView) bool { return settled(c) && len(c.History) == want })
		if c.Halted != "" {
			t.Fatalf("halted %q after %d calls", c.Halted, i+1)
		}
	}
	reqs := api.requests()
	if len(reqs) != calls {
		t.Fatalf("%d requests, want %d", len(reqs), calls)
	}
	for i, req := range reqs {
		opts, _ := req["options"].(map[string]any)
		if opts["num_ctx"] != 16384.0 {
			t.Fatalf("request %d: options %v, want num_ctx 16384", i, req["options"])
		}
	}
	var spent struct {
		USD float64 `json:"usd"`
	}
	if getJSON(t, s.url+"/api/budget", &spent); spent.USD != 0 {
		t.Errorf("budget spent $%v on a local model", spent.USD)
	}
	s.stop(t)
}

// OpenRouter requests ask for usage accounting (usage.include) and the
// ledger settles each call at the usage.cost the response carries, for a
// model the catalog has no price for.
func TestOpenRouterUsageCostIsWhatTheLedgerSettles(t *testing.T) {
	api := newUsageEmulator(t, func(int) (string, string) {
		return "xong", `{"prompt_tokens":500,"completion_tokens":20,"cost":0.0123}`
	})
	home := initHome(t)
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/unpriced", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+api.URL+"/v1")
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "tính tiền"})
	waitConv(t, s.url, acc["conversation_id"].(string), "answered", settled)
	if req := api.requests(); len(req) != 1 || fmt.Sprint(req[0]["usage"]) != "map[include:true]" {
		t.Errorf("requests %v, want one asking for usage accounting", req)
	}
	var spent struct {
		USD              float64 `json:"usd"`
		OpenReservations []any   `json:"open_reservations"`
	}
	if code := getJSON(t, s.url+"/api/budget", &spent); code != 200 || math.Abs(spent.USD-0.0123) > 1e-12 || len(spent.OpenReservations) != 0 {
		t.Errorf("/api/budget = %d %+v, want $0.0123 settled and nothing open", code, spent)
	}
	s.stop(t)
}
