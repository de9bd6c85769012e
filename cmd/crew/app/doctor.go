package app

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/cluster"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/projections/search"
	"github.com/my-agent-crew/crew/tools/browser"
	"github.com/my-agent-crew/crew/tools/desktop"
	"github.com/my-agent-crew/crew/tools/mcp"
	"github.com/my-agent-crew/crew/tools/shell"
	toolweb "github.com/my-agent-crew/crew/tools/web"
)

// Doctor is what crew doctor says of the home h at dir after its config,
// one line a string: the running server and the agents, then each
// feature's section (its package's Report, from the parts the App builds
// of the home) in this order, last the agents' checks on the crew built
// read-only. None names a secret's value: r, the home's secrets, redacts
// what the MCP servers say.
func Doctor(ctx context.Context, dir string, h *home.Home, r *events.Redactor, getenv func(string) string) []string {
	info, _ := home.ReadServeInfo(dir) // none: no URL, where no server answers
	token, _ := h.AuthToken(getenv)
	server := web.Client{URL: info.URL, Token: token}
	sections := [][]string{server.Running(ctx, info.PID, info.Listen), h.AgentsLoaded(), home.Versions(), storeReport(ctx, dir, h),
		h.NATSAccess(), h.WebTrust(getenv), shell.Report(h.Config.ShellNetwork()), h.Routes(getenv),
		toolweb.Report(h.Config.WebSearch.Keyed(h.Lookup(getenv))), search.Report(embedder(h, getenv)),
		browser.Report(h.Config.BrowserEnabled, browser.Find(), h.Dir, h.BrowserUsers()), mcpReport(ctx, h, r, getenv, server),
		{desktop.HelperReport(ctx, h.Dir)}, h.ComputerReport()}
	a, err := Open(ctx, dir, h, Options{ReadOnly: true, Getenv: getenv, Secrets: r})
	if err != nil {
		return append(slices.Concat(sections...), fmt.Sprintf("tools: %v", err))
	}
	defer a.Close()
	return append(slices.Concat(sections...), a.AgentChecks()...)
}

// ServerClient asks the server that holds the store of the home at dir
// (as the command named it), with the auth token serve uses.
func ServerClient(h *home.Home, dir string, getenv func(string) string) (web.Client, error) {
	info, err := home.ReadServeInfo(dir)
	token, _ := h.AuthToken(getenv)
	return web.Client{URL: info.URL, Token: token}, err
}

// AgentChecks runs the checks serve makes before it runs an agent
// (routes, tool names, shell patterns) against the App's tools, so a
// skipped agent shows in doctor too (loop.Checks).
func (a *App) AgentChecks() []string {
	return loop.Checks(a.Home.Dir, loopAgents(a.Home, nil, a.Registry.Defaults()), a.Registry)
}

// mcpReport is what crew doctor says of each MCP server of config.yaml
// (mcp.Report): as the running server has them when one runs, else as
// they answer now. What it says is redacted with r, the home's secrets.
func mcpReport(ctx context.Context, h *home.Home, r *events.Redactor, getenv func(string) string, server web.Client) []string {
	servers, problems := MCPServers(h, r, getenv)
	// The stdio servers start as serve starts them, in a sandbox of the
	// home's network policy (nil when config.yaml's is bad: none starts).
	box, _ := shell.New(h.Config.ShellNetwork())
	return mcp.Report(ctx, home.CrewVersion(), servers, problems, box, r, server.RunningMCP)
}

// storeReport is doctor's lines on the event store and the projections'
// lag, from the running server when there is one, else by opening the
// store.
func storeReport(ctx context.Context, dir string, h *home.Home) []string {
	var lines []string
	if h.Config.NATS.URL != "" {
		lines = append(lines, cluster.Report(ctx, h.Config.NATS.Client()))
	}
	lines = append(lines, h.StoreFiles())
	a, err := Open(ctx, dir, h, Options{StoreOnly: true})
	if errors.Is(err, home.ErrStoreBusy) {
		info, err := home.ReadServeInfo(dir)
		if err != nil {
			return append(lines, fmt.Sprintf("  held by another process: %v", err))
		}
		return append(lines, web.Client{URL: info.URL}.HeldBy(ctx, info.PID)...)
	}
	if err != nil {
		return append(lines, fmt.Sprintf("  cannot open: %v", err))
	}
	defer a.Close()
	return append(lines, projections.Lags(ctx, a.Log(), a.DB())...)
}
