package web

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
)

//go:embed web_search.md
var webSearchDescription string

// Default endpoints of the hosted providers (config.yaml's url replaces
// them).
const (
	BraveURL  = "https://api.search.brave.com/res/v1/web/search"
	TavilyURL = "https://api.tavily.com/search"
)

// WebSearch asks the configured provider. Its endpoint is the owner's
// choice (often their own SearXNG on the LAN), so that one request is not
// behind the wall; every result URL fetched later is.
type WebSearch struct {
	Settings *Settings
	Client   Doer
}

// Doer sends a request (an *http.Client).
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

type httpClient struct{ timeout time.Duration }

func (c *httpClient) Do(r *http.Request) (*http.Response, error) {
	return (&http.Client{Timeout: c.timeout, CheckRedirect: keepKeyOnHost}).Do(r)
}

// keepKeyOnHost follows a provider's redirect (at most ten) but sends its
// key only to the host it was configured for: net/http drops
// Authorization on a redirect elsewhere, not Brave's X-Subscription-Token.
func keepKeyOnHost(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return fmt.Errorf("stopped after %d redirects", len(via))
	}
	if req.URL.Host != via[0].URL.Host {
		req.Header.Del("X-Subscription-Token")
		req.Header.Del("Authorization")
	}
	return nil
}

// ReadOnly: it changes nothing, so a script may call it (R-SCR).
func (WebSearch) ReadOnly() bool { return true }

func (WebSearch) Def() tools.Def {
	return tools.Def{Name: "web_search", Description: webSearchDescription + "\n" + fence.Rule, Default: true}
}

// Hit is one search result.
type Hit struct{ Title, URL, Snippet string }

type searchArgs struct {
	Query string `json:"query" jsonschema:"What to search for."`
	Count int    `json:"count,omitempty" jsonschema:"How many results (default 8)." schema:"minimum=1,maximum=20"`
}

func (s WebSearch) Run(ctx context.Context, _ tools.Env, a searchArgs) (tools.Result, error) {
	a.Query = strings.TrimSpace(a.Query)
	if a.Query == "" {
		return tools.Failf("web_search: the query is empty"), nil
	}
	if a.Count <= 0 {
		a.Count = 8
	}
	a.Count = min(a.Count, 20)
	cfg := s.Settings.Search()
	if cfg.Provider == "" {
		return tools.Failf("web_search: no search provider is configured on this crew. The owner sets one in config.yaml: " +
			"web_search: {provider: searxng, url: http://…} (their own SearXNG), {provider: brave} with BRAVE_API_KEY, " +
			"or {provider: tavily} with TAVILY_API_KEY in the env file. fetch_url still reads a URL you know."), nil
	}
	if k := Providers[cfg.Provider]; k != "" && cfg.Key == "" {
		return tools.Failf("web_search: the %s provider needs %s in the env file, and it is not set", cfg.Provider, k), nil
	}
	hits, err := s.search(ctx, cfg, a.Query, a.Count)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		return tools.Failf("web_search (%s): %v", cfg.Provider, err), nil
	}
	if len(hits) > a.Count {
		hits = hits[:a.Count]
	}
	var b strings.Builder
	if len(hits) == 0 {
		b.WriteString("(no results)\n")
	}
	for i, h := range hits {
		fmt.Fprintf(&b, "%d. %s\n   %s\n", i+1, oneLine(h.Title), oneLine(h.URL))
		if sn := oneLine(h.Snippet); sn != "" {
			fmt.Fprintf(&b, "   %s\n", sn)
		}
	}
	out := fmt.Sprintf("%d results for %q from %s; read one with fetch_url.\n\n", len(hits), a.Query, cfg.Provider) +
		fence.Wrap("web_search "+cfg.Provider, b.String())
	return tools.Result{Output: out, Meta: map[string]any{"provider": cfg.Provider, "query": a.Query, "results": len(hits)}}, nil
}

func (s WebSearch) search(ctx context.Context, cfg SearchConfig, q string, n int) ([]Hit, error) {
	var req *http.Request
	var err error
	switch cfg.Provider {
	case ProviderSearXNG:
		u, perr := url.Parse(strings.TrimRight(cfg.URL, "/") + "/search")
		if perr != nil || cfg.URL == "" {
			return nil, fmt.Errorf("web_search.url %q is not a URL", cfg.URL)
		}
		u.RawQuery = url.Values{"q": {q}, "format": {"json"}}.Encode()
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	case ProviderBrave:
		u, perr := url.Parse(cmp.Or(cfg.URL, BraveURL))
		if perr != nil {
			return nil, perr
		}
		u.RawQuery = url.Values{"q": {q}, "count": {fmt.Sprint(n)}}.Encode()
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err == nil {
			req.Header.Set("X-Subscription-Token", cfg.Key)
		}
	case ProviderTavily:
		body, _ := json.Marshal(map[string]any{"query": q, "max_results": n})
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, cmp.Or(cfg.URL, TavilyURL), strings.NewReader(string(body)))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+cfg.Key)
		}
	default:
		return nil, fmt.Errorf("unknown provider %q", cfg.Provider)
	}
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.Client.Do(req)
	if err != nil {
		return nil, unwrapURLError(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 2<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the provider answered %s: %s", resp.Status, oneLine(string(data[:min(len(data), 200)])))
	}
	var hits []Hit
	switch cfg.Provider {
	case ProviderSearXNG, ProviderTavily:
		var r struct {
			Results []struct{ Title, URL, Content string } `json:"results"`
		}
		err = json.Unmarshal(data, &r)
		for _, x := range r.Results {
			hits = append(hits, Hit{x.Title, x.URL, x.Content})
		}
	case ProviderBrave:
		var r struct {
			Web struct {
				Results []struct{ Title, URL, Description string } `json:"results"`
			} `json:"web"`
		}
		err = json.Unmarshal(data, &r)
		for _, x := range r.Web.Results {
			hits = append(hits, Hit{x.Title, x.URL, stripTags(x.Description)})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the provider's answer is not the JSON expected: %v", err)
	}
	return hits, nil
}

// stripTags removes the <strong> highlighting some providers put in
// snippets.
func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>' && in:
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}
