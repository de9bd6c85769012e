package llm_test

import (
	"testing"

	"github.com/my-agent-crew/crew/loop/llm"
)

func ptr[T any](v T) *T { return &v }

func TestCatalogOwnerOverKnownOverDefault(t *testing.T) {
	c := llm.NewCatalog(map[string]llm.ModelOverride{
		"openrouter:anthropic/claude-sonnet-4": {ContextWindow: ptr(100000)},
		"openrouter:acme/new":                  {Vision: ptr(true), InputUSDPerMTok: ptr(2.0)},
		"ollama:tiny":                          {MaxOutputTokens: ptr(512)},
	})
	s := c.Lookup("openrouter:anthropic/claude-sonnet-4")
	if s.ContextWindow != 100000 || !s.Vision || s.MaxOutputTokens != llm.DefaultMaxOutputTokens || s.Price == nil || s.Price.InputPerMTok != 3 {
		t.Errorf("owner window over known row: %+v", s)
	}
	s = c.Lookup("openrouter:acme/new")
	if s.ContextWindow != llm.DefaultContextWindow || !s.Vision || s.Price == nil || s.Price.InputPerMTok != 2 || s.Price.OutputPerMTok != 0 {
		t.Errorf("unknown model with owner fields: %+v", s)
	}
	if s := c.Lookup("ollama:tiny"); s.MaxOutputTokens != 512 || s.Price == nil || *s.Price != (llm.Price{}) {
		t.Errorf("ollama:tiny %+v (a local model is free)", s)
	}
	if s := c.Lookup("openrouter:acme/other"); s.Price != nil || s.Vision || s.ContextWindow != llm.DefaultContextWindow {
		t.Errorf("unknown route %+v", s)
	}
	var none *llm.Catalog
	if s := none.Lookup("openrouter:openai/gpt-4o-mini"); s.ContextWindow != 128000 || !s.Vision || s.Price.OutputPerMTok != 0.6 {
		t.Errorf("nil catalog still knows the built-in rows: %+v", s)
	}
	if s := none.Lookup("fake:echo"); s.Price == nil || *s.Price != (llm.Price{}) {
		t.Errorf("fakes are free: %+v", s)
	}
}

// Every request says how long the reply may be: the route's
// max_output_tokens, 4096 when nothing is known (R-LOOP-7).
func TestEveryRequestSendsMaxTokens(t *testing.T) {
	for _, tt := range []struct {
		cat  *llm.Catalog
		want float64
	}{
		{nil, 4096},
		{llm.NewCatalog(map[string]llm.ModelOverride{"ollama:qwen3:8b": {MaxOutputTokens: ptr(1234)}}), 1234},
	} {
		s := newChatServer(t, sse(textChunk("ok"), finishChunk("stop")))
		if _, err := ollama(t, s, llm.Config{Catalog: tt.cat}).GenerateContent(t.Context(), human("hi")); err != nil {
			t.Fatal(err)
		}
		if got := s.only(t).body["max_tokens"]; got != tt.want {
			t.Errorf("max_tokens %v, want %v", got, tt.want)
		}
	}
}
