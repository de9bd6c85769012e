package web

import "fmt"

// Report is what crew doctor says of the web tools: the wall, and which
// search provider web_search asks under c (whether its key is set, never
// its value).
func Report(c SearchConfig) []string {
	lines := []string{"web: fetch_url and the browser reach only public addresses on ports 80 and 443 (the wall has no setting)"}
	switch k := Providers[c.Provider]; {
	case c.Provider == "":
		lines = append(lines, "  web_search: no provider configured (set web_search: {provider: searxng, url: …}, brave or tavily in config.yaml)")
	case c.Provider == ProviderSearXNG:
		lines = append(lines, fmt.Sprintf("  web_search: searxng at %s", c.URL))
	case c.Key == "":
		lines = append(lines, fmt.Sprintf("  web_search: %s, but %s is not set: the tool will say so", c.Provider, k))
	default:
		lines = append(lines, fmt.Sprintf("  web_search: %s (%s set)", c.Provider, k))
	}
	return lines
}
