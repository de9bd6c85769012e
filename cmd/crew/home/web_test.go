package home

import (
	"path/filepath"
	"strings"
	"testing"
)

// web_search in config.yaml: a provider from the list, searxng with its
// url; a mistake stops with file:line:col; the key comes from the env file.
func TestWebSearchConfig(t *testing.T) {
	for content, want := range map[string]string{
		"web_search: {provider: bing}\n":                    `config.yaml:1:24: web_search.provider: must be one of "searxng", "brave", "tavily", got "bing"`,
		"web_search:\n  provider: searxng\n":                `config.yaml:2:3: missing required key "web_search.url"`,
		"web_search: {provider: searxng, url: 'ftp://x'}\n": "config.yaml:1:38: web_search.url",
	} {
		dir := newHome(t)
		writeFile(t, filepath.Join(dir, "config.yaml"), content)
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", content, err, want)
		}
	}
	dir := newHome(t)
	writeFile(t, filepath.Join(dir, "config.yaml"), "web_search: {provider: brave}\n")
	writeFile(t, filepath.Join(dir, "env"), "BRAVE_API_KEY=bk-123\n")
	h := mustLoad(t, dir)
	if c := h.SearchConfig(func(string) string { return "" }); c.Provider != "brave" || c.Key != "bk-123" {
		t.Errorf("search config %+v", c)
	}
	if r := strings.Join(h.WebReport(func(string) string { return "" }), "\n"); !strings.Contains(r, "web_search: brave (BRAVE_API_KEY set)") || strings.Contains(r, "bk-123") {
		t.Errorf("report:\n%s", r)
	}
}

// The browser tools come with agent.yaml's browser key on a machine with
// browser_enabled and a Chromium, never through tools:; doctor says which.
func TestBrowserToolsComeWithTheBrowserKey(t *testing.T) {
	defer func(f func() string) { findChromium = f }(findChromium)
	chromium := "/usr/bin/chromium"
	findChromium = func() string { return chromium }
	dir := newHome(t)
	writeFile(t, filepath.Join(dir, "agents", "reader", "agent.yaml"), "name: r\nbrowser: read\nbrowser_hosts: [example.com, 'intra.lan:8443']\ntools: [workspace_list]\n")
	writeFile(t, filepath.Join(dir, "agents", "doer", "agent.yaml"), "name: d\nbrowser: act\nbrowser_ask_patterns: ['(?i)archive']\n")
	writeFile(t, filepath.Join(dir, "agents", "sneaky", "agent.yaml"), "name: s\ntools: [workspace_list, browser_act]\n")
	names := func(h *Home, id string) string {
		return strings.Join(h.LoopAgents(nil, []string{"workspace_read"})[id].Tools, " ")
	}
	h := mustLoad(t, dir)
	if got := names(h, "reader"); strings.Contains(got, "browser") {
		t.Errorf("browser_enabled unset, reader got %s", got)
	}
	if r := strings.Join(h.BrowserReport(), "\n"); !strings.Contains(r, "browser: off") || !strings.Contains(r, "doer (act), reader (read)") {
		t.Errorf("report: %s", r)
	}
	writeFile(t, filepath.Join(dir, "config.yaml"), "browser_enabled: true\n")
	h = mustLoad(t, dir)
	if got := names(h, "reader"); got != "workspace_list browser_navigate browser_snapshot browser_text browser_tabs browser_screenshot browser_pdf" {
		t.Errorf("reader: %s", got)
	}
	if got := names(h, "doer"); !strings.HasSuffix(got, "browser_pdf browser_act browser_download") || !strings.HasPrefix(got, "workspace_read ") {
		t.Errorf("doer: %s", got)
	}
	if got := names(h, "sneaky"); got != "workspace_list" {
		t.Errorf("sneaky (browser tool under tools:, no key): %s", got)
	}
	p := h.LoopAgents(nil, nil)["reader"].Policy
	if p.Browser != "read" || strings.Join(p.BrowserHosts, ",") != "example.com,intra.lan:8443" {
		t.Errorf("policy %+v", p)
	}
	if r := strings.Join(h.BrowserReport(), "\n"); !strings.Contains(r, "browser: enabled, Chromium /usr/bin/chromium") {
		t.Errorf("report: %s", r)
	}
	chromium = ""
	if got := names(h, "reader"); got != "workspace_list" {
		t.Errorf("no Chromium, reader got %s", got)
	}
	if r := strings.Join(h.BrowserReport(), "\n"); !strings.Contains(r, "no Chromium found") {
		t.Errorf("report: %s", r)
	}
	writeFile(t, filepath.Join(dir, "agents", "reader", "agent.yaml"), "name: r\nbrowser: write\n")
	writeFile(t, filepath.Join(dir, "agents", "doer", "agent.yaml"), "name: d\nbrowser_hosts: ['http://example.com/']\n")
	h = mustLoad(t, dir)
	if len(h.Problems) != 2 {
		t.Errorf("problems %v", h.Problems)
	}
	for _, p := range h.Problems {
		if !strings.Contains(p.Error(), "browser") {
			t.Errorf("problem %v", p)
		}
	}
}
