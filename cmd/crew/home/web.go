package home

import (
	"fmt"

	"github.com/my-agent-crew/crew/tools/web"
)

// SearchConfig is config.yaml's web_search with its provider's key from
// the env file or the process environment (getenv).
func (h *Home) SearchConfig(getenv func(string) string) web.SearchConfig {
	c := web.SearchConfig{Provider: h.Config.WebSearch.Provider, URL: h.Config.WebSearch.URL}
	if k := web.Providers[c.Provider]; k != "" {
		c.Key = h.Getenv(k, getenv)
	}
	return c
}

// WebReport is what doctor says of the web tools: the wall, and which
// search provider web_search asks (whether its key is set, never its
// value).
func (h *Home) WebReport(getenv func(string) string) []string {
	lines := []string{"web: fetch_url and the browser reach only public addresses on ports 80 and 443 (the wall has no setting)"}
	c := h.SearchConfig(getenv)
	switch k := web.Providers[c.Provider]; {
	case c.Provider == "":
		lines = append(lines, "  web_search: no provider configured (set web_search: {provider: searxng, url: …}, brave or tavily in config.yaml)")
	case c.Provider == web.ProviderSearXNG:
		lines = append(lines, fmt.Sprintf("  web_search: searxng at %s", c.URL))
	case c.Key == "":
		lines = append(lines, fmt.Sprintf("  web_search: %s, but %s is not set: the tool will say so", c.Provider, k))
	default:
		lines = append(lines, fmt.Sprintf("  web_search: %s (%s set)", c.Provider, k))
	}
	return lines
}
