package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

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

// What crew doctor reports of the parts the App builds from the home, one
// report line per string; doctor prints them. None names a secret's value.

// ServerClient asks the server that holds the store of the home at dir
// (as the command named it), with the auth token serve uses.
func ServerClient(h *home.Home, dir string, getenv func(string) string) (web.Client, error) {
	info, err := home.ReadServeInfo(dir)
	token, _ := h.AuthToken(getenv)
	return web.Client{URL: info.URL, Token: token}, err
}

// ShellReport is doctor's section on shell commands (shell.Report)
// under config.yaml's network policy.
func ShellReport(h *home.Home) []string { return shell.Report(h.Config.ShellNetwork()) }

// WebReport is what doctor says of the web tools (toolweb.Report).
func WebReport(h *home.Home, getenv func(string) string) []string {
	return toolweb.Report(h.Config.WebSearch.Keyed(h.Lookup(getenv)))
}

// BrowserReport is what doctor says of the browser (browser.Report).
func BrowserReport(h *home.Home) []string {
	return browser.Report(h.Config.BrowserEnabled, browser.Find(), h.Dir, h.BrowserUsers())
}

// DesktopReport says whether the desktop helper answers on the home's
// socket, and which agents have the computer tools.
func DesktopReport(ctx context.Context, h *home.Home) []string {
	return append([]string{desktop.HelperReport(ctx, h.Dir)}, h.ComputerReport()...)
}

// RecallReport is what doctor says of recall (search.Report).
func RecallReport(h *home.Home, getenv func(string) string) []string {
	return search.Report(embedder(h, getenv))
}

// AgentChecks runs the checks serve makes before it runs an agent
// (routes, tool names, shell patterns) against the App's tools, so a
// skipped agent shows in doctor too (loop.Checks).
func (a *App) AgentChecks() []string {
	return loop.Checks(a.Home.Dir, loopAgents(a.Home, nil, a.Registry.Defaults()), a.Registry)
}

// MCPReport is what crew doctor says of each MCP server of config.yaml
// (mcp.Report): as the running server has them when one runs, else as
// they answer now. What it says is redacted with r, the home's secrets.
func MCPReport(ctx context.Context, h *home.Home, r *events.Redactor, getenv func(string) string) []string {
	servers, problems := MCPServers(h, r, getenv)
	// The stdio servers start as serve starts them, in a sandbox of the
	// home's network policy (nil when config.yaml's is bad: none starts).
	box, _ := shell.New(h.Config.ShellNetwork())
	c, err := ServerClient(h, h.Dir, getenv)
	if err != nil {
		c = web.Client{} // no server: the servers as they answer now
	}
	return mcp.Report(ctx, home.CrewVersion(), servers, problems, box, r, c.RunningMCP)
}

// StoreReport is doctor's lines on the event store and the projections'
// lag, from the running server when there is one, else by opening the
// store.
func StoreReport(ctx context.Context, dir string, h *home.Home) (lines []string) {
	w := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	if h.Config.NATS.URL != "" {
		w("event log: NATS %s: %s", events.RedactURL(h.Config.NATS.URL), cluster.Report(ctx, h.Config.NATS.Client()))
		w("projections: %s", filepath.Join(dir, "data", "projections.db"))
	} else {
		w("%s", home.StoreFiles(dir))
	}
	a, err := Open(ctx, dir, h, Options{StoreOnly: true})
	if errors.Is(err, home.ErrStoreBusy) {
		info, ierr := home.ReadServeInfo(dir)
		if ierr != nil {
			w("  held by another process: %v", ierr)
			return lines
		}
		w("  held by crew serve (pid %d) at %s", info.PID, info.URL)
		return append(lines, web.Client{URL: info.URL}.HealthLines(ctx)...)
	}
	if err != nil {
		w("  cannot open: %v", err)
		return lines
	}
	defer a.Close()
	si, err := a.Log().Stream().Info(ctx)
	if err != nil {
		w("  stream: %v", err)
		return lines
	}
	w("  stream CREW: %d events, %s, sequences %d..%d", si.State.Msgs, home.HumanBytes(int64(si.State.Bytes)), si.State.FirstSeq, si.State.LastSeq)
	return append(lines, projections.Lags(a.DB(), si.State.LastSeq)...)
}

// RunningServer is doctor's line on the home's running crew serve, as it
// wrote data/serve.json at start (web.Client.Running); "" when none answers.
func RunningServer(ctx context.Context, dir string) string {
	info, err := home.ReadServeInfo(dir)
	if err != nil {
		return ""
	}
	return web.Client{URL: info.URL}.Running(ctx, info.PID, info.Listen)
}
