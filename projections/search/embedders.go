package search

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// HTTPEmbedder calls an embedding endpoint: Ollama's /api/embed, or an
// OpenAI-compatible /embeddings (OpenRouter and the like).
type HTTPEmbedder struct {
	// Name is the route as configured, "ollama:nomic-embed-text".
	Name string
	// OpenAI selects the OpenAI-compatible protocol; otherwise Ollama's.
	OpenAI  bool
	BaseURL string // Ollama's host, or the provider's base URL (…/api/v1)
	APIKey  string // OpenAI-compatible only
	Model   string
	HTTP    *http.Client // nil: a client with a 60 s timeout
}

func (e *HTTPEmbedder) Route() string { return e.Name }

// maxEmbedBody caps an embedding answer read.
const maxEmbedBody = 64 << 20

func (e *HTTPEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, int, error) {
	hc := e.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	base := strings.TrimRight(e.BaseURL, "/")
	url := base + "/api/embed"
	if e.OpenAI {
		url = base + "/embeddings"
	}
	body, _ := json.Marshal(map[string]any{"model": e.Model, "input": texts})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", e.Name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.OpenAI && e.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", e.Name, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxEmbedBody))
	if err != nil {
		return nil, 0, fmt.Errorf("%s: read answer: %w", e.Name, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(raw))
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		return nil, 0, fmt.Errorf("%s: %s: %s", e.Name, resp.Status, msg)
	}
	if e.OpenAI {
		var out struct {
			Data []struct {
				Index     int       `json:"index"`
				Embedding []float32 `json:"embedding"`
			} `json:"data"`
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, 0, fmt.Errorf("%s: answer: %w", e.Name, err)
		}
		vecs := make([][]float32, len(texts))
		for _, d := range out.Data {
			if d.Index < 0 || d.Index >= len(vecs) {
				return nil, 0, fmt.Errorf("%s: answer names input %d of %d", e.Name, d.Index, len(vecs))
			}
			vecs[d.Index] = d.Embedding
		}
		for i, v := range vecs {
			if len(v) == 0 {
				return nil, 0, fmt.Errorf("%s: no vector for input %d", e.Name, i)
			}
		}
		return vecs, out.Usage.PromptTokens, nil
	}
	var out struct {
		Embeddings      [][]float32 `json:"embeddings"`
		PromptEvalCount int         `json:"prompt_eval_count"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, 0, fmt.Errorf("%s: answer: %w", e.Name, err)
	}
	return out.Embeddings, out.PromptEvalCount, nil
}

// Report is doctor's line on recall: words alone (e nil: config.yaml
// names no embedding route), or words and meaning from e, and whether
// its key is missing.
func Report(e *HTTPEmbedder) []string {
	if e == nil {
		return []string{"recall: BM25 (words) alone; set embeddings: {route: \"ollama:nomic-embed-text\"} in config.yaml to rank by meaning too"}
	}
	line := fmt.Sprintf("recall: BM25 and embeddings from %s at %s (reciprocal-rank fusion)", e.Name, e.BaseURL)
	if e.OpenAI && e.APIKey == "" {
		line += ", but OPENROUTER_API_KEY is not set: embedding fails and recall falls back to BM25"
	}
	return []string{line}
}
