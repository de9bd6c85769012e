package llm_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/my-agent-crew/crew/loop/llm"
)

// TestModelBoundaryRequestAndReply: a typed Request reaches the wire as
// the client always sent it (system, an image, an assistant's calls, a
// tool result, tools, max_tokens, the cache breakpoints), and the typed
// Reply carries the text, the calls, the finish, the usage with cached and
// reasoning tokens, the billed cost and the provider's request id.
func TestModelBoundaryRequestAndReply(t *testing.T) {
	s := newChatServer(t, sse(
		`{"id":"gen-42","model":"anthropic/claude-sonnet-4","choices":[{"index":0,"delta":{"content":"Reading.","reasoning":"think"}}]}`,
		toolChunk(0, "call_2", "workspace_read", `{"path":"b.txt"}`, false),
		finishChunk("tool_calls"),
		usageChunk(120, 30, `,"cost":0.0042,"prompt_tokens_details":{"cached_tokens":100},"completion_tokens_details":{"reasoning_tokens":12}`),
	))
	m := llm.FromLangchain(openrouter(t, s))
	var deltas deltaLog
	rep, err := m.Call(t.Context(), llm.Request{
		Messages: []llm.Message{
			llm.Text(llm.RoleSystem, "You are helpful."),
			{Role: llm.RoleUser, Parts: []llm.Part{{Text: "look"}, {ImageURL: "data:image/png;base64,AAAA"}}},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "workspace_read", Arguments: `{"path":"a.txt"}`}}},
			llm.ToolResult("call_1", "workspace_read", "hello"),
		},
		Tools:           []llm.Tool{{Name: "workspace_read", Description: "Read a file.", Parameters: []byte(`{"type":"object"}`)}},
		MaxTokens:       777,
		CacheBreakpoint: 3,
		OnDelta:         deltas.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	cost := 0.0042
	want := llm.Reply{Text: "Reading.", Reasoning: "think", Finish: llm.FinishToolCalls,
		ToolCalls: []llm.ToolCall{{ID: "call_2", Name: "workspace_read", Arguments: `{"path":"b.txt"}`}},
		Usage:     llm.Usage{Input: 120, Output: 30, CachedInput: 100, Reasoning: 12},
		CostUSD:   &cost, Model: "anthropic/claude-sonnet-4", RequestID: "gen-42"}
	if rep.Usage.CacheSavedUSD == nil {
		t.Error("no CacheSavedUSD for 100 cached tokens of a priced model")
	}
	want.Usage.CacheSavedUSD = rep.Usage.CacheSavedUSD
	if !reflect.DeepEqual(rep, want) {
		t.Errorf("reply\n %+v\nwant\n %+v", rep, want)
	}
	if len(deltas.all()) < 2 {
		t.Errorf("deltas %+v: want the text and the call's", deltas.all())
	}
	req := s.only(t)
	wantMsgs := `[{"content":[{"cache_control":{"type":"ephemeral"},"text":"You are helpful.","type":"text"}],"role":"system"},` +
		`{"content":[{"text":"look","type":"text"},{"image_url":{"url":"data:image/png;base64,AAAA"},"type":"image_url"}],"role":"user"},` +
		`{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\"a.txt\"}","name":"workspace_read"},"id":"call_1","type":"function"}]},` +
		`{"content":[{"cache_control":{"type":"ephemeral"},"text":"hello","type":"text"}],"role":"tool","tool_call_id":"call_1"}]`
	if got := jsonOf(t, req.body["messages"]); got != wantMsgs {
		t.Errorf("messages sent\n %s\nwant\n %s", got, wantMsgs)
	}
	if got := jsonOf(t, req.body["tools"]); got != `[{"function":{"description":"Read a file.","name":"workspace_read","parameters":{"type":"object"}},"type":"function"}]` {
		t.Errorf("tools sent %s", got)
	}
	if req.body["max_tokens"] != 777.0 {
		t.Errorf("max_tokens %v, want 777", req.body["max_tokens"])
	}
}

// TestModelBoundaryMissingUsageIsUnknownCost: a provider that sends no
// usage block gives zero tokens and a nil cost, never a cost of 0, even
// with a price in the catalog.
func TestModelBoundaryMissingUsageIsUnknownCost(t *testing.T) {
	s := newChatServer(t, sse(textChunk("hi"), finishChunk("stop")))
	m := llm.FromLangchain(openrouter(t, s))
	rep, err := m.Call(t.Context(), llm.Request{Messages: []llm.Message{llm.Text(llm.RoleUser, "hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.CostUSD != nil || rep.Usage != (llm.Usage{}) || rep.Text != "hi" || rep.Finish != llm.FinishStop {
		t.Errorf("reply %+v: want text hi, no usage, unknown cost", rep)
	}
}

// TestModelBoundaryErrorsStayClassified: the provider's failures come
// through the boundary as *llm.Error of today's classes.
func TestModelBoundaryErrorsStayClassified(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		want   error
	}{
		{429, `{"error":{"message":"slow down"}}`, llm.ErrRateLimited},
		{503, `{"error":{"message":"upstream down"}}`, llm.ErrUnavailable},
		{400, `{"error":{"message":"This model's maximum context length is 8192 tokens"}}`, llm.ErrContextTooLong},
		{401, `{"error":{"message":"bad key"}}`, llm.ErrPermanent},
	} {
		s := newChatServer(t, status(c.status, c.body))
		_, err := llm.FromLangchain(openrouter(t, s)).Call(t.Context(), llm.Request{Messages: []llm.Message{llm.Text(llm.RoleUser, "hi")}})
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != c.want || e.Status != c.status {
			t.Errorf("HTTP %d: got %v, want an *llm.Error of %v", c.status, err, c.want)
		}
	}
}
