package home

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/my-agent-crew/crew/tools/browser"
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

// findChromium finds the browser; a variable so tests can pretend.
var findChromium = browser.Find

// withBrowser is names with the browser tools the agent's browser key
// gives, when config.yaml enables the browser and a Chromium is found.
// Browser tools listed under tools: do not count: they come with the key.
func (h *Home) withBrowser(a *Agent, names []string) []string {
	out := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return strings.HasPrefix(n, "browser_") })
	if !h.Config.BrowserEnabled || a.Browser == "" || findChromium() == "" {
		return out
	}
	return append(out, browser.ToolNames(a.Browser)...)
}

// BrowserReport is what doctor says of the browser: enabled or not,
// which Chromium, and which agents get which tools.
func (h *Home) BrowserReport() []string {
	var users []string
	for _, id := range slices.Sorted(maps.Keys(h.Agents)) {
		if m := h.Agents[id].Browser; m != "" {
			users = append(users, id+" ("+m+")")
		}
	}
	who := "no agent has the browser key"
	if len(users) > 0 {
		who = "agents: " + strings.Join(users, ", ")
	}
	path := findChromium()
	switch {
	case !h.Config.BrowserEnabled:
		return []string{"browser: off (browser_enabled is not true in config.yaml); " + who}
	case path == "":
		return []string{"browser: enabled, but no Chromium found (install chromium): no agent gets browser tools; " + who}
	}
	return []string{fmt.Sprintf("browser: enabled, Chromium %s, one per agent, profiles in %s; %s", path, filepath.Join(h.Dir, "browser"), who)}
}
