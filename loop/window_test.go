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
	Msgs      []llm.Message
	Tools     []llm.Tool
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
	Tools []struct {
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

// decodeWire turns a request body back into the harness's messages, for
// the estimate to count as the harness counts.
func decodeWire(raw []byte) (msgs []llm.Message, tools []llm.Tool, maxTokens int, err error) {
	var w wireRequest
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, nil, 0, err
	}
	for _, t := range w.Tools {
		tools = append(tools, llm.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	for _, m := range w.Messages {
		var parts []llm.Part
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			if text != "" || m.Role != "assistant" {
				parts = append(parts, llm.Part{Text: text})
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
					parts = append(parts, llm.Part{Text: p.Text})
				case "image_url":
					parts = append(parts, llm.Part{ImageURL: p.ImageURL.URL})
				}
			}
		}
		msg := llm.Message{Role: llm.Role(m.Role), Parts: parts}
		if m.Role == "tool" {
			msg = llm.ToolResult(m.ToolCallID, "", msg.Text())
		}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		msgs = append(msgs, msg)
	}
	return msgs, tools, w.MaxTokens, nil
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
	return len(req.Msgs) > 0 && strings.HasPrefix(req.Msgs[0].Text(), "You condense")
}

// lastOf is the request's last message, and its text.
func lastOf(req windowRequest) (llm.Role, string) {
	m := req.Msgs[len(req.Msgs)-1]
	return m.Role, m.Text()
}

// toolResult is one tool result a request carried.
type toolResult struct{ ToolCallID, Content string }

// toolResults are the request's tool results in order.
func toolResults(req windowRequest) []toolResult {
	var out []toolResult
	for _, m := range req.Msgs {
		if m.Role == llm.RoleTool {
			out = append(out, toolResult{m.ToolCallID, m.Text()})
		}
	}
	return out
}

// windowModels is the harness's models on an Ollama route at s.
func windowModels(s *windowServer, cat *llm.Catalog) llm.Models {
	return llm.NewModelCache(llm.NewProviders(llm.Config{OllamaHost: s.URL, Catalog: cat}))
}
