package llm

import (
	"fmt"
	"strings"
)

// Providers a route may name.
const (
	ProviderOpenRouter = "openrouter"
	ProviderOllama     = "ollama"
	ProviderFake       = "fake"
)

// EnvRoutes is the variable RoutesFromEnv reads.
const EnvRoutes = "MY_AGENT_ROUTES"

// Route names one model at one provider: "openrouter:anthropic/claude-sonnet-4",
// "ollama:qwen3:8b", "fake:echo", "fake:script:testdata/turn.yaml".
type Route struct {
	Provider string
	Model    string // everything after the first colon, colons included
}

func (r Route) String() string { return r.Provider + ":" + r.Model }

// scriptPath is the file of a fake:script route, or "".
func (r Route) scriptPath() string {
	if r.Provider != ProviderFake {
		return ""
	}
	p, ok := strings.CutPrefix(r.Model, "script:")
	if !ok {
		return ""
	}
	return p
}

// ParseRoute reads "provider:model". Errors quote the route text.
func ParseRoute(s string) (Route, error) {
	text := strings.TrimSpace(s)
	provider, model, ok := strings.Cut(text, ":")
	if !ok {
		return Route{}, fmt.Errorf("route %q: want provider:model (provider openrouter, ollama or fake)", s)
	}
	r := Route{Provider: provider, Model: model}
	if model == "" {
		return Route{}, fmt.Errorf("route %q: missing model after %q", s, provider+":")
	}
	if strings.ContainsAny(model, " \t\n,") && r.scriptPath() == "" {
		return Route{}, fmt.Errorf("route %q: model %q contains a space or comma", s, model)
	}
	switch provider {
	case ProviderOpenRouter, ProviderOllama:
	case ProviderFake:
		if model != "echo" && r.scriptPath() == "" {
			return Route{}, fmt.Errorf("route %q: fake model must be echo or script:<file>", s)
		}
	default:
		return Route{}, fmt.Errorf("route %q: unknown provider %q (want openrouter, ollama or fake)", s, provider)
	}
	return r, nil
}

// RoutesFromEnv reads MY_AGENT_ROUTES, a comma-separated route list that
// overrides every agent's routes. Unset or blank gives nil, nil; empty items
// (a trailing comma) are skipped.
func RoutesFromEnv(getenv func(string) string) ([]Route, error) {
	v := getenv(EnvRoutes)
	var out []Route
	for item := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		r, err := ParseRoute(item)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvRoutes, err)
		}
		out = append(out, r)
	}
	return out, nil
}
