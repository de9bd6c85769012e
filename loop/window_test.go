package loop_test

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

// windowServer is an OpenAI-compatible /chat/completions endpoint that
// enforces a context window: a request whose prompt (counted with
// llm.EstimateTokens on the messages and tools it received) plus its
// max_tokens is over window is answered 400 "context length exceeded",
// as a provider does. Otherwise reply decides the answer. It records each
// request as received and as counted.
type windowServer struct {
	*httptest.Server
	t      *testing.T
	window int
	reply  func(req windowRequest) windowReply

	mu       sync.Mutex
	reqs     []windowRequest
	exceeded int
	// forceTooLong answers the next n turn requests (not summaries) "too
	// long" whatever they hold.
	forceTooLong int
}

type windowRequest struct {
	N         int // the request's number, from 0
	Raw       map[string]any
	Msgs      []llms.MessageContent
	Tools     []llms.Tool
	Tokens    int // as the server counts them
	MaxTokens int
	Exceeded  bool
}

// windowReply is a reply to stream: text, or one tool call, with usage.
type windowReply struct {
	Text     string
	Tool     string
	Args     string
	Usage    string // extra JSON fields of the usage block, from ", "
	Break503 bool   // stream Text, then break the stream (no finish)
}

func newWindowServer(t *testing.T, window int, reply func(windowRequest) windowReply) *windowServer {
	t.Helper()
	s := &windowServer{t: t, window: window, reply: reply}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// wireRequest is the part of a request the server reads.
type wireRequest struct {
	MaxTokens int `json:"max_tokens"`
	Messages  []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []llms.Tool `json:"tools"`
}

// decodeWire turns a request body back into langchaingo messages, for the
// estimate to count as the harness counts.
func decodeWire(raw []byte) (msgs []llms.MessageContent, tools []llms.Tool, maxTokens int, err error) {
	var w wireRequest
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, nil, 0, err
	}
	for _, m := range w.Messages {
		var parts []llms.ContentPart
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			if text != "" || m.Role != "assistant" {
				parts = append(parts, llms.TextContent{Text: text})
			}
		} else {
			var ps []struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				ImageURL *struct {
					URL string `json:"url"`
				} `json:"image_url"`
			}
			if len(m.Content) > 0 && string(m.Content) != "null" {
				if err := json.Unmarshal(m.Content, &ps); err != nil {
					return nil, nil, 0, fmt.Errorf("content of a %s message: %w", m.Role, err)
				}
			}
			for _, p := range ps {
				switch p.Type {
				case "text":
					parts = append(parts, llms.TextContent{Text: p.Text})
				case "image_url":
					parts = append(parts, llms.ImageURLContent{URL: p.ImageURL.URL})
				}
			}
		}
		role := map[string]llms.ChatMessageType{"system": llms.ChatMessageTypeSystem, "user": llms.ChatMessageTypeHuman,
			"assistant": llms.ChatMessageTypeAI, "tool": llms.ChatMessageTypeTool}[m.Role]
		if m.Role == "tool" {
			var content strings.Builder
			for _, p := range parts {
				if tp, ok := p.(llms.TextContent); ok {
					content.WriteString(tp.Text)
				}
			}
			parts = []llms.ContentPart{llms.ToolCallResponse{ToolCallID: m.ToolCallID, Content: content.String()}}
		}
		for _, c := range m.ToolCalls {
			parts = append(parts, llms.ToolCall{ID: c.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: c.Function.Name, Arguments: c.Function.Arguments}})
		}
		msgs = append(msgs, llms.MessageContent{Role: role, Parts: parts})
	}
	return msgs, w.Tools, w.MaxTokens, nil
}

func (s *windowServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	msgs, tools, maxTokens, err := decodeWire(raw)
	if err != nil {
		s.t.Errorf("window server: %v: %s", err, raw)
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	req := windowRequest{Raw: body, Msgs: msgs, Tools: tools, Tokens: llm.EstimateTokens(msgs, tools), MaxTokens: maxTokens}
	s.mu.Lock()
	req.N = len(s.reqs)
	forced := s.forceTooLong > 0 && !isSummaryRequest(req)
	if forced {
		s.forceTooLong--
	}
	req.Exceeded = req.Tokens+maxTokens > s.window
	if req.Exceeded {
		s.exceeded++
	}
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	if req.Exceeded || forced {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","code":"context_length_exceeded"}}`,
			s.window, req.Tokens+maxTokens, req.Tokens, maxTokens)
		return
	}
	rep := s.reply(req)
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	if rep.Text != "" {
		send(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": rep.Text}}}})
	}
	if rep.Break503 {
		fmt.Fprint(w, "data: {\"error\":{\"message\":\"upstream overloaded\",\"code\":503}}\n\n")
		return
	}
	finish := "stop"
	if rep.Tool != "" {
		finish = "tool_calls"
		send(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{map[string]any{
			"index": 0, "id": fmt.Sprintf("call_%d", req.N), "type": "function",
			"function": map[string]any{"name": rep.Tool, "arguments": rep.Args}}}}}}})
	}
	send(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}})
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d%s}}\n\n", req.Tokens, llm.TokensOfBytes(len(rep.Text)+len(rep.Args))+1, rep.Usage)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (s *windowServer) requests() []windowRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]windowRequest(nil), s.reqs...)
}

func (s *windowServer) tooLong() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exceeded
}

func (s *windowServer) force(n int) {
	s.mu.Lock()
	s.forceTooLong = n
	s.mu.Unlock()
}

// isSummaryRequest: the harness asks for a compaction summary.
func isSummaryRequest(req windowRequest) bool {
	if len(req.Msgs) == 0 || len(req.Msgs[0].Parts) == 0 {
		return false
	}
	tp, ok := req.Msgs[0].Parts[0].(llms.TextContent)
	return ok && strings.HasPrefix(tp.Text, "You condense")
}

// lastOf is the request's last message, and its text.
func lastOf(req windowRequest) (llms.ChatMessageType, string) {
	m := req.Msgs[len(req.Msgs)-1]
	var b strings.Builder
	for _, p := range m.Parts {
		switch p := p.(type) {
		case llms.TextContent:
			b.WriteString(p.Text)
		case llms.ToolCallResponse:
			b.WriteString(p.Content)
		}
	}
	return m.Role, b.String()
}

// toolResults are the request's tool results in order.
func toolResults(req windowRequest) []llms.ToolCallResponse {
	var out []llms.ToolCallResponse
	for _, m := range req.Msgs {
		for _, p := range m.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

// windowModels is the harness's models on an Ollama route at s.
func windowModels(s *windowServer, cat *llm.Catalog) func(route string) (llms.Model, error) {
	p := llm.NewProviders(llm.Config{OllamaHost: s.URL, Catalog: cat})
	return func(route string) (llms.Model, error) {
		r, err := llm.ParseRoute(route)
		if err != nil {
			return nil, err
		}
		return p.Model(r)
	}
}
