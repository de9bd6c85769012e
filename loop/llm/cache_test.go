package llm_test

import (
	"math"
	"testing"

	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/tmc/langchaingo/llms"
)

// Prompt caching on the wire: an Anthropic model through OpenRouter gets
// cache_control ephemeral on the system prompt and on the message the
// loop names (here a tool result, sent as a text part), nowhere else; the
// cached and written tokens of the usage block (Anthropic's own field
// names too) come back priced from the catalog with what they saved.
func TestCacheBreakpointsAndCachedUsage(t *testing.T) {
	s := newChatServer(t, sse(textChunk("ok"), finishChunk("stop"),
		usageChunk(1000, 10, `,"cache_read_input_tokens":600,"cache_creation_input_tokens":300`)))
	m := openrouter(t, s)
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You are the test agent."),
		llms.TextParts(llms.ChatMessageTypeHuman, "read it"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "read", Arguments: "{}"}}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1", Content: "the file"}}},
		llms.TextParts(llms.ChatMessageTypeHuman, "a steer"),
	}
	resp, err := m.GenerateContent(t.Context(), msgs, llm.WithCacheBreakpoint(3))
	if err != nil {
		t.Fatal(err)
	}
	wire := s.only(t).body["messages"].([]any)
	for i, msg := range wire {
		parts, isParts := msg.(map[string]any)["content"].([]any)
		marked := isParts && len(parts) > 0 && parts[len(parts)-1].(map[string]any)["cache_control"] != nil
		if want := i == 0 || i == 3; marked != want {
			t.Errorf("message %d: cache_control %v, want %v (%v)", i, marked, want, msg)
		}
	}
	rep := llm.ReplyOf(resp)
	cached, written, saved, cost := rep.Usage.CachedInput, rep.Usage.CacheWrite, rep.Usage.CacheSavedUSD, rep.CostUSD
	// Sonnet: $3 in, $15 out, reads $0.30, writes $3.75.
	wantCost := (100*3 + 600*0.3 + 300*3.75 + 10*15) / 1e6
	wantSaved := (600*2.7 - 300*0.75) / 1e6
	if cached != 600 || written != 300 || saved == nil || math.Abs(*saved-wantSaved) > 1e-12 || cost == nil || math.Abs(*cost-wantCost) > 1e-12 {
		t.Errorf("cached %d written %d saved %v cost %v; want 600, 300, %v, %v", cached, written, saved, cost, wantSaved, wantCost)
	}
}

// An Ollama request sends the route's window as options.num_ctx; an
// OpenAI model through OpenRouter caches on its own and gets no marks.
func TestOllamaNumCtxAndNoMarksWithoutBreakpoints(t *testing.T) {
	s := newChatServer(t, sse(textChunk("ok"), finishChunk("stop")))
	if _, err := ollama(t, s, llm.Config{}).GenerateContent(t.Context(), human("hi"), llm.WithCacheBreakpoint(1)); err != nil {
		t.Fatal(err)
	}
	req := s.only(t)
	if opts, _ := req.body["options"].(map[string]any); opts["num_ctx"] != 40960.0 {
		t.Errorf("options %v, want num_ctx 40960 (qwen3:8b's window)", req.body["options"])
	}
	if _, parts := req.body["messages"].([]any)[0].(map[string]any)["content"].([]any); parts {
		t.Errorf("an Ollama request got cache marks: %s", req.raw)
	}
}
