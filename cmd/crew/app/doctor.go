package app

import (
	"context"
	"errors"
	"fmt"
	"io"

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

// Doctor writes to w what crew doctor says of the home h at dir after
// its config, each section as soon as it is known (a slow one shows the
// earlier meanwhile): the running server, the agents, then each feature's
// section (its package's Report) in this order, last the checks serve
// makes before it runs an agent (loop.Checks) on the crew built
// read-only. r, the home's secrets, redacts what the MCP servers say.
func Doctor(ctx context.Context, dir string, h *home.Home, r *events.Redactor, getenv func(string) string, w io.Writer) {
	say := func(lines ...string) {
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	info, _ := home.ReadServeInfo(dir) // none: no URL, where no server answers
	token, _ := h.AuthToken(getenv)
	server := web.Client{URL: info.URL, Token: token}
	say(server.Running(ctx, info.PID, info.Listen)...)
	say(h.AgentsLoaded()...)
	say(home.Versions()...)
	say(storeReport(ctx, dir, h)...)
	say(h.NATSAccess()...)
	say(h.WebTrust(getenv)...)
	say(shell.Report(h.Config.ShellNetwork())...)
	say(h.Routes(getenv)...)
	say(toolweb.Report(h.Config.WebSearch.Keyed(h.Lookup(getenv)))...)
	say(search.Report(embedder(h, getenv))...)
	say(browser.Report(h.Config.BrowserEnabled, browser.Find(), h.Dir, h.BrowserUsers())...)
	servers, problems := MCPServers(h, r, getenv)
	// The MCP servers as the running server has them, else as they answer
	// now: the stdio ones start as serve starts them, in a sandbox of the
	// home's network policy (nil when config.yaml's is bad: none starts).
	box, _ := shell.New(h.Config.ShellNetwork())
	say(mcp.Report(ctx, home.CrewVersion(), servers, problems, box, r, server.RunningMCP)...)
	say(desktop.HelperReport(ctx, h.Dir))
	say(h.ComputerReport()...)
	a, err := Open(ctx, dir, h, Options{ReadOnly: true, Getenv: getenv, Secrets: r})
	if err != nil {
		say(fmt.Sprintf("tools: %v", err))
		return
	}
	defer a.Close()
	say(loop.Checks(a.Home.Dir, loopAgents(a.Home, nil, a.Registry.Defaults()), a.Registry)...)
}

// ServerClient asks the server that holds the store of the home at dir
// (as the command named it), with the auth token serve uses.
func ServerClient(h *home.Home, dir string, getenv func(string) string) (web.Client, error) {
	info, err := home.ReadServeInfo(dir)
	token, _ := h.AuthToken(getenv)
	return web.Client{URL: info.URL, Token: token}, err
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
