package app

import (
	"log/slog"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/browser"
	"github.com/my-agent-crew/crew/tools/shell"
	"github.com/my-agent-crew/crew/tools/web"
)

// netTools are what the tools that reach outside the home share: the
// search provider web_search reads (replaced on reload) and the agents'
// browsers. nil, for the commands that only list or replay tools, leaves
// web_search with no provider and the browser tools without a browser.
type netTools struct {
	web     *web.Settings
	browser *browser.Manager
}

// newNetTools takes the settings of the loaded home; browsers start on
// first use.
func newNetTools(dir string, h *home.Home, getenv func(string) string, logger *slog.Logger) *netTools {
	nt := &netTools{web: &web.Settings{}, browser: browser.NewManager(browser.Config{Home: dir, Logger: logger})}
	nt.reload(h, getenv)
	return nt
}

// Close stops the browsers.
func (nt *netTools) Close() { nt.browser.Close() }

// reload follows config.yaml and the env file after a reload.
func (nt *netTools) reload(h *home.Home, getenv func(string) string) {
	nt.web.SetSearch(searchConfig(h, getenv))
}

// tools are fetch_url, web_search and the browser tools, dialling
// through the one wall.
func (nt *netTools) tools(box *shell.Sandbox) []tools.Tool {
	var s *web.Settings
	var m *browser.Manager
	if nt != nil {
		s, m = nt.web, nt.browser
	}
	return append(web.Tools(s, nil, box), browser.Tools(m)...)
}
