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
}
