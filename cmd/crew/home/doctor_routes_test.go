package home

import (
	"path/filepath"
	"strings"
	"testing"
)

// crew doctor names each route's window (Ollama's as the num_ctx sent),
// whether its prompt is cached, and where its price comes from; a route
// with no price anywhere says each call holds budget.unknown_call_usd.
func TestDoctorShowsEachRoutesWindowCachingAndPrice(t *testing.T) {
	dir := newHome(t)
	writeFile(t, filepath.Join(dir, "env"), "MY_AGENT_ROUTES=openrouter:anthropic/claude-sonnet-4,ollama:llama3.2,openrouter:openai/gpt-4o-mini,openrouter:acme/new\n")
	writeFile(t, filepath.Join(dir, "config.yaml"), "timezone: UTC\nmodels:\n  ollama:llama3.2: {context_window: 8192}\n")
	h := mustLoad(t, dir)
	out := strings.Join(h.Routes(func(string) string { return "" }), "\n")
	for _, want := range []string{
		"openrouter:anthropic/claude-sonnet-4: window 200000 tokens (max output 4096); prompt caching on (cache_control breakpoints); price $3 in / $15 out per Mtok",
		"ollama:llama3.2: window 8192 tokens (max output 4096), sent as num_ctx 8192; prompt caching off",
		"ollama:llama3.2: window 8192 tokens (max output 4096), sent as num_ctx 8192; prompt caching off (the provider caches nothing we know of); price free",
		"openrouter:openai/gpt-4o-mini: window 128000 tokens (max output 4096); prompt caching on (the provider's automatic prefix cache)",
		"openrouter:acme/new: window 32768 tokens (max output 4096); prompt caching off (the provider caches nothing we know of); price not in the catalog: each call reserves budget.unknown_call_usd and settles to the cost OpenRouter reports",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's routes lack %q:\n%s", want, out)
		}
	}
}
