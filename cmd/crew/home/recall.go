package home

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/projections/search"
)

// Embedder is the embedding route config.yaml names for recall, with the
// provider's address and key from the env file or the environment; nil
// when none is set (BM25 alone).
func (h *Home) Embedder(getenv func(string) string) *search.HTTPEmbedder {
	route := h.Config.Embeddings.Route
	provider, model, ok := strings.Cut(route, ":")
	if route == "" || !ok {
		return nil
	}
	e := &search.HTTPEmbedder{Name: route, Model: model}
	switch provider {
	case "ollama":
		e.BaseURL = llm.OllamaBase(h.Getenv("OLLAMA_HOST", getenv))
	case "openrouter":
		e.OpenAI = true
		e.BaseURL = cmp.Or(strings.TrimSpace(h.Getenv("OPENROUTER_BASE_URL", getenv)), llm.DefaultOpenRouterBaseURL)
		e.APIKey = h.Getenv("OPENROUTER_API_KEY", getenv)
	default:
		return nil // the schema allows no other
	}
	return e
}

// RecallReport is what doctor says of recall: words alone, or words and
// meaning with which route.
func (h *Home) RecallReport(getenv func(string) string) []string {
	e := h.Embedder(getenv)
	if e == nil {
		return []string{"recall: BM25 (words) alone; set embeddings: {route: \"ollama:nomic-embed-text\"} in config.yaml to rank by meaning too"}
	}
	line := fmt.Sprintf("recall: BM25 and embeddings from %s at %s (reciprocal-rank fusion)", e.Name, e.BaseURL)
	if e.OpenAI && e.APIKey == "" {
		line += ", but OPENROUTER_API_KEY is not set: embedding fails and recall falls back to BM25"
	}
	return []string{line}
}
