package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

// Defaults for Config.
const (
	DefaultOpenRouterBaseURL = "https://openrouter.ai/api/v1"
	DefaultOllamaHost        = "http://127.0.0.1:11434"
)

// Price is what a model costs in USD per million tokens.
type Price struct {
	InputPerMTok  float64
	OutputPerMTok float64
	// CachedInputPerMTok is an input token read from the prompt cache,
	// CacheWritePerMTok one written to it; nil: the input price.
	CachedInputPerMTok *float64
	CacheWritePerMTok  *float64
}

// Cost of one call.
func (p Price) Cost(inputTokens, outputTokens int) float64 {
	return (float64(inputTokens)*p.InputPerMTok + float64(outputTokens)*p.OutputPerMTok) / 1e6
}

// CachedCost is the cost of a call whose inputTokens hold cached tokens
// read from the prompt cache and written tokens written to it, and what
// the cache saved against the full input price (negative when the writes
// cost more than the reads saved).
func (p Price) CachedCost(inputTokens, cached, written, outputTokens int) (cost, saved float64) {
	read, write := p.InputPerMTok, p.InputPerMTok
	if p.CachedInputPerMTok != nil {
		read = *p.CachedInputPerMTok
	}
	if p.CacheWritePerMTok != nil {
		write = *p.CacheWritePerMTok
	}
	plain := max(inputTokens-cached-written, 0)
	cost = (float64(plain)*p.InputPerMTok + float64(cached)*read + float64(written)*write + float64(outputTokens)*p.OutputPerMTok) / 1e6
	saved = (float64(cached)*(p.InputPerMTok-read) - float64(written)*(write-p.InputPerMTok)) / 1e6
	return cost, saved
}

// Config is everything the providers need; the caller reads env and files.
type Config struct {
	OpenRouterAPIKey  string
	OpenRouterBaseURL string // "" is DefaultOpenRouterBaseURL
	OllamaHost        string // "" is DefaultOllamaHost; OLLAMA_HOST forms like "0.0.0.0:11434" work
	HTTPClient        *http.Client
	// Catalog gives each route's max_tokens and its price (used when the
	// provider reports no cost); nil knows only the defaults.
	Catalog *Catalog
	// ScriptDir anchors relative fake:script paths; "" is the working
	// directory.
	ScriptDir string
	// IdleTimeout, see ClientConfig; 0 is DefaultIdleTimeout.
	IdleTimeout time.Duration
}

// Env is the providers' settings from the environment getenv reads
// (OPENROUTER_API_KEY, OPENROUTER_BASE_URL, OLLAMA_HOST), with catalog.
func Env(getenv func(string) string, catalog *Catalog) Config {
	return Config{OpenRouterAPIKey: getenv("OPENROUTER_API_KEY"), OpenRouterBaseURL: getenv("OPENROUTER_BASE_URL"),
		OllamaHost: getenv("OLLAMA_HOST"), Catalog: catalog}
}

// Endpoint is where provider's HTTP API answers and the key it takes
// (openrouter's is OpenAI's API shape), for the callers that speak to it
// themselves (recall's embeddings); false for a provider with none.
func (p *Providers) Endpoint(provider string) (baseURL, key string, ok bool) {
	switch provider {
	case ProviderOllama:
		return p.ollamaBase, "", true
	case ProviderOpenRouter:
		return strings.TrimSpace(p.cfg.OpenRouterBaseURL), p.cfg.OpenRouterAPIKey, true
	}
	return "", "", false
}

// Providers turns routes into models.
type Providers struct {
	cfg        Config
	ollamaBase string
	http       *http.Client
}

// NewProviders applies the defaults.
func NewProviders(cfg Config) *Providers {
	if strings.TrimSpace(cfg.OpenRouterBaseURL) == "" {
		cfg.OpenRouterBaseURL = DefaultOpenRouterBaseURL
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	return &Providers{cfg: cfg, ollamaBase: ollamaBase(cfg.OllamaHost), http: hc}
}

// ollamaBase normalises an OLLAMA_HOST value: a scheme-less host gets
// http:// and port 11434, and the listen-anywhere address means this
// machine.
func ollamaBase(host string) string {
	host = strings.TrimSpace(host)
	if host == "" {
		return DefaultOllamaHost
	}
	if !strings.Contains(host, "://") {
		h, port, err := net.SplitHostPort(host)
		if err != nil {
			h, port = strings.Trim(host, "[]"), "11434"
		}
		if h == "" {
			h = "127.0.0.1"
		}
		host = "http://" + net.JoinHostPort(h, port)
	}
	u, err := url.Parse(host)
	if err != nil {
		return strings.TrimRight(host, "/")
	}
	switch u.Hostname() {
	case "0.0.0.0", "::":
		port := u.Port()
		u.Host = "127.0.0.1"
		if port != "" {
			u.Host += ":" + port
		}
	}
	return strings.TrimRight(u.String(), "/")
}

// Model returns the model behind r. A fake:script route loads and checks
// its file here, and every call returns a fresh ScriptModel starting at
// the first reply: keep one per route for the process lifetime (the server
// caches by route) so the script advances across turns.
func (p *Providers) Model(r Route) (Model, error) {
	m, err := p.langchain(r)
	if err != nil {
		return nil, err
	}
	return lcModel{m}, nil
}

// langchain is the langchaingo model behind r.
func (p *Providers) langchain(r Route) (generator, error) {
	switch r.Provider {
	case ProviderOpenRouter:
		if p.cfg.OpenRouterAPIKey == "" {
			return nil, &Error{Kind: ErrPermanent, Provider: ProviderOpenRouter, Body: "no OpenRouter API key (OPENROUTER_API_KEY)"}
		}
		spec := p.cfg.Catalog.Lookup(r.String())
		return NewClient(ClientConfig{
			Provider: ProviderOpenRouter, BaseURL: p.cfg.OpenRouterBaseURL, APIKey: p.cfg.OpenRouterAPIKey,
			Model: r.Model, HTTPClient: p.http, Price: spec.Price, AskCost: true, IdleTimeout: p.cfg.IdleTimeout,
			MaxOutputTokens: spec.MaxOutputTokens, CacheBreakpoints: spec.Cache == CacheBreakpoints,
		})
	case ProviderOllama:
		spec := p.cfg.Catalog.Lookup(r.String())
		return NewClient(ClientConfig{
			Provider: ProviderOllama, BaseURL: p.ollamaBase, Model: r.Model,
			HTTPClient: p.http, Price: spec.Price, IdleTimeout: p.cfg.IdleTimeout,
			MaxOutputTokens: spec.MaxOutputTokens, NumCtx: spec.ContextWindow,
		})
	case ProviderFake:
		if r.Model == "echo" {
			return Echo{}, nil
		}
		if path := r.scriptPath(); path != "" {
			if !filepath.IsAbs(path) && p.cfg.ScriptDir != "" {
				path = filepath.Join(p.cfg.ScriptDir, path)
			}
			return LoadScript(path)
		}
	}
	return nil, fmt.Errorf("route %q: %w: no such model", r.String(), ErrPermanent)
}

// ollamaProbeTimeout bounds the reachability check at startup.
const ollamaProbeTimeout = 2 * time.Second

// Available says which real providers can be used: "openrouter" when a key
// is set (the key is not checked over the network) and "ollama:<model>" for
// each model a reachable Ollama has pulled. note explains, in one line,
// what is missing; with nothing usable the caller runs on fake:echo.
func (p *Providers) Available(ctx context.Context) (usable []string, note string) {
	var notes []string
	if p.cfg.OpenRouterAPIKey != "" {
		usable = append(usable, ProviderOpenRouter)
	} else {
		notes = append(notes, "OpenRouter: no API key")
	}
	models, err := p.ollamaModels(ctx)
	switch {
	case err != nil:
		notes = append(notes, fmt.Sprintf("Ollama at %s: %v", p.ollamaBase, err))
	case len(models) == 0:
		notes = append(notes, fmt.Sprintf("Ollama at %s: reachable but no models pulled (ollama pull <model>)", p.ollamaBase))
	default:
		for _, m := range models {
			usable = append(usable, ProviderOllama+":"+m)
		}
	}
	return usable, strings.Join(notes, "; ")
}

func (p *Providers) ollamaModels(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, ollamaProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.ollamaBase+"/api/tags", nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("unreachable (%w)", unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/tags: HTTP %d", resp.StatusCode)
	}
	var tags struct {
		Models []struct {
			Name  string `json:"name"`
			Model string `json:"model"`
		} `json:"models"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tags); err != nil {
		return nil, fmt.Errorf("GET /api/tags: %w", err)
	}
	var out []string
	for _, m := range tags.Models {
		name := m.Name
		if name == "" {
			name = m.Model
		}
		if name != "" {
			out = append(out, name)
		}
	}
	return out, nil
}

// unwrapURLError drops the "Get \"http://…\":" prefix the note already says.
func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// OllamaBase is the base URL an OLLAMA_HOST value names, with the
// defaults applied (for the embedding route, which is not a chat model).
func OllamaBase(host string) string { return ollamaBase(host) }
