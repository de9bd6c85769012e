package llm_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/tmc/langchaingo/llms"
)

// chatServer is an OpenAI-compatible /chat/completions endpoint that plays
// one scripted reply per request and records what it was sent.
type chatServer struct {
	*httptest.Server
	t       *testing.T
	mu      sync.Mutex
	replies []http.HandlerFunc
	reqs    []recorded
}

type recorded struct {
	path   string
	header http.Header
	body   map[string]any
	raw    string
}

func newChatServer(t *testing.T, replies ...http.HandlerFunc) *chatServer {
	t.Helper()
	s := &chatServer{t: t, replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *chatServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		s.t.Errorf("request body is not JSON: %v: %s", err, raw)
	}
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, recorded{path: r.URL.Path, header: r.Header.Clone(), body: body, raw: string(raw)})
	s.mu.Unlock()
	if n >= len(s.replies) {
		http.Error(w, `{"error":{"message":"test server: no reply scripted"}}`, http.StatusTeapot)
		return
	}
	s.replies[n](w, r)
}

func (s *chatServer) requests() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.reqs...)
}

func (s *chatServer) only(t *testing.T) recorded {
	t.Helper()
	reqs := s.requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	return reqs[0]
}

// sse answers with the given data payloads as server-sent events, then
// [DONE].
func sse(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": OPENROUTER PROCESSING\n\n")
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

func status(code int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// Chunk builders for the common shapes.

func textChunk(s string) string {
	b, _ := json.Marshal(s)
	return `{"choices":[{"index":0,"delta":{"content":` + string(b) + `}}]}`
}

func finishChunk(reason string) string {
	return `{"choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]}`
}

func usageChunk(in, out int, extra string) string {
	return fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d%s}}`, in, out, in+out, extra)
}

// toolChunk is one tool-call delta; fields left empty are omitted.
func toolChunk(index int, id, name, args string, repeatType bool) string {
	tc := map[string]any{"index": index}
	if id != "" {
		tc["id"] = id
	}
	if id != "" || repeatType {
		tc["type"] = "function"
	}
	fn := map[string]any{"arguments": args}
	if name != "" {
		fn["name"] = name
	}
	tc["function"] = fn
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{tc}}}}})
	return string(b)
}

// ollama returns a model on an Ollama-style host (no /v1 in the URL).
func ollama(t *testing.T, s *chatServer, cfg llm.Config) llms.Model {
	t.Helper()
	cfg.OllamaHost = s.URL
	m, err := llm.NewProviders(cfg).Langchain(llm.Route{Provider: "ollama", Model: "qwen3:8b"})
	if err != nil {
		t.Fatal(err)
	}
	return m.(llms.Model)
}

func openrouter(t *testing.T, s *chatServer) llms.Model {
	t.Helper()
	m, err := llm.NewProviders(llm.Config{OpenRouterAPIKey: "sk-test", OpenRouterBaseURL: s.URL + "/api/v1"}).
		Langchain(llm.Route{Provider: "openrouter", Model: "anthropic/claude-sonnet-4"})
	if err != nil {
		t.Fatal(err)
	}
	return m.(llms.Model)
}

// deltaLog collects deltas; calls arrive on the calling goroutine, the
// mutex only keeps -race honest if that ever changes.
type deltaLog struct {
	mu sync.Mutex
	ds []llm.Delta
}

func (l *deltaLog) add(d llm.Delta) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ds = append(l.ds, d)
}

func (l *deltaLog) all() []llm.Delta {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]llm.Delta(nil), l.ds...)
}

// ask is a request of one user message.
func ask(s string) llm.Request {
	return llm.Request{Messages: []llm.Message{llm.Text(llm.RoleUser, s)}}
}

func human(s string) []llms.MessageContent {
	return []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, s)}
}

func choice(t *testing.T, resp *llms.ContentResponse) *llms.ContentChoice {
	t.Helper()
	if resp == nil || len(resp.Choices) != 1 {
		t.Fatalf("response %+v: want exactly one choice", resp)
	}
	return resp.Choices[0]
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
