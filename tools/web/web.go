// Package web holds the crew's web tools: fetch_url, which reads one page
// through the guarded dialer (tools/web/wall, R-SEC-2), and web_search,
// which asks the search provider config.yaml names. What either returns
// from outside is fenced as data (tools/fence, R-SEC-1).
package web

import (
	"sync"
	"time"

	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/shell"
	"github.com/my-agent-crew/crew/tools/web/wall"
)

// Search providers of config.yaml's web_search.provider.
const (
	ProviderSearXNG = "searxng"
	ProviderBrave   = "brave"
	ProviderTavily  = "tavily"
)

// Providers are the known providers with the env key each needs ("" for
// none).
var Providers = map[string]string{ProviderSearXNG: "", ProviderBrave: "BRAVE_API_KEY", ProviderTavily: "TAVILY_API_KEY"}

// SearchConfig is config.yaml's web_search: block (cmd/crew/home decodes
// it), with its provider's key once Keyed.
type SearchConfig struct {
	Provider string `yaml:"provider"` // searxng, brave or tavily; "" when none is configured
	URL      string `yaml:"url"`      // the endpoint (searxng: the instance; others: their API unless set)
	Key      string `yaml:"-"`        // the provider's API key, from <home>/env or the environment
}

// Keyed is c with its provider's API key (Providers names its variable)
// as getenv reads it.
func (c SearchConfig) Keyed(getenv func(string) string) SearchConfig {
	if k := Providers[c.Provider]; k != "" {
		c.Key = getenv(k)
	}
	return c
}

// Settings is what the web tools read at each call; the server replaces
// it on reload.
type Settings struct {
	mu     sync.RWMutex
	search SearchConfig
}

// SetSearch replaces the search provider.
func (s *Settings) SetSearch(c SearchConfig) {
	s.mu.Lock()
	s.search = c
	s.mu.Unlock()
}

// Search is the current search provider.
func (s *Settings) Search() SearchConfig {
	if s == nil {
		return SearchConfig{}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.search
}

// Tools returns fetch_url and web_search. Both dial through w (nil: the
// wall with the system resolver); web_search reads its provider from s;
// fetch_url reads a PDF in a child started in box.
func Tools(s *Settings, w *wall.Wall, box *shell.Sandbox) []tools.Tool {
	if w == nil {
		w = wall.New()
	}
	return []tools.Tool{
		tools.NewFunc[fetchArgs](FetchURL{Client: w.Client(fetchTimeout), Sandbox: box}),
		tools.NewFunc[searchArgs](WebSearch{Settings: s, Client: &httpClient{timeout: 20 * time.Second}}),
	}
}
