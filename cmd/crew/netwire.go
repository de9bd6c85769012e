package main

import (
	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/web"
)

// netTools are what the tools that reach outside the home share: the
// search provider web_search reads (replaced on reload). nil, for the
// commands that only list or replay tools, leaves web_search with no
// provider.
type netTools struct {
	web *web.Settings
}

// newNetTools takes the settings of the loaded home.
func newNetTools(h *home.Home, getenv func(string) string) *netTools {
	nt := &netTools{web: &web.Settings{}}
	nt.reload(h, getenv)
	return nt
}

// reload follows config.yaml and the env file after a reload.
func (nt *netTools) reload(h *home.Home, getenv func(string) string) {
	nt.web.SetSearch(h.SearchConfig(getenv))
}

// tools are fetch_url and web_search, dialling through the one wall.
func (nt *netTools) tools() []tools.Tool {
	var s *web.Settings
	if nt != nil {
		s = nt.web
	}
	return web.Tools(s, nil)
}
