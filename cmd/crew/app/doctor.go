package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/my-agent-crew/crew/projections"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools/browser"
	"github.com/my-agent-crew/crew/tools/desktop"
	"github.com/my-agent-crew/crew/tools/kit"
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

// ServerHealth is what the running server at url says of itself and of
// its projections' lag.
func ServerHealth(ctx context.Context, url string) []string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	health, err := web.Client{URL: url}.Health(ctx)
	if err != nil {
		return []string{fmt.Sprintf("  /healthz: %v", err)}
	}
	lines := []string{"  /healthz: " + health.Status}
	for _, p := range health.Projections {
		stopped := ""
		if p.Error != "" {
			stopped = ", stopped: " + p.Error
		}
		lines = append(lines, fmt.Sprintf("  projection %s: at %d, lag %d%s", p.Name, p.Checkpoint, p.Lag, stopped))
	}
	if t := health.Turns; t != nil {
		lines = append(lines, TurnsLine(*t))
	}
	return lines
}

// TurnsLine is doctor's line for the turn worker's counters (/healthz
// details.turns).
func TurnsLine(t loop.WorkerStats) string {
	line := fmt.Sprintf("  turns: %d in flight (turns_in_flight %d), %d queued, %d waiting to retry, %d failed passes since start",
		t.InFlight, t.Limit, t.Queued, t.Retrying, t.FailedPasses)
	if t.FailedPasses > 0 {
		line += " (each is in the server's log at warn: \"turn pass failed\")"
	}
	return line
}

// ShellReport lists each protection of shell commands and hooks, and
// whether this kernel gives it (each proven by running a command), under
// the network policy of config.yaml (shell_ports, shell_hosts).
func ShellReport(h *home.Home) []string {
	box, err := shell.New(h.Config.ShellNetwork())
	if err != nil {
		return []string{"shell protections: " + err.Error()}
	}
	lines := []string{"shell protections (shell_run, script jobs and hooks; Landlock and Unix-socket block when shell_network: false or shell_write_paths is set):"}
	for _, p := range box.Protections() {
		lines = append(lines, fmt.Sprintf("  %s: %s", p.Name, p.Detail))
	}
	return lines
}

// WebReport is what doctor says of the web tools (toolweb.Report).
func WebReport(h *home.Home, getenv func(string) string) []string {
	return toolweb.Report(searchConfig(h, getenv))
}

// BrowserReport is what doctor says of the browser (browser.Report).
func BrowserReport(h *home.Home) []string {
	return browser.Report(h.Config.BrowserEnabled, findChromium(), h.Dir, h.BrowserUsers())
}

// DesktopReport says whether the desktop helper answers on the home's
// socket, and which agents have the computer tools.
func DesktopReport(ctx context.Context, h *home.Home) []string {
	return append([]string{desktop.HelperReport(ctx, h.Dir)}, h.ComputerReport()...)
}

// RecallReport is what doctor says of recall: words alone, or words and
// meaning with which route.
func RecallReport(h *home.Home, getenv func(string) string) []string {
	e := embedder(h, getenv)
	if e == nil {
		return []string{"recall: BM25 (words) alone; set embeddings: {route: \"ollama:nomic-embed-text\"} in config.yaml to rank by meaning too"}
	}
	line := fmt.Sprintf("recall: BM25 and embeddings from %s at %s (reciprocal-rank fusion)", e.Name, e.BaseURL)
	if e.OpenAI && e.APIKey == "" {
		line += ", but OPENROUTER_API_KEY is not set: embedding fails and recall falls back to BM25"
	}
	return []string{line}
}

// AgentChecks runs the checks serve makes before it runs an agent
// (routes, tool names, shell patterns) against the App's tools, so a
// skipped agent shows in doctor too.
func (a *App) AgentChecks() []string {
	var lines []string
	agents := loopAgents(a.Home, nil, a.Registry.Defaults())
	for _, id := range slices.Sorted(maps.Keys(agents)) {
		if err := loop.CheckAgent(agents[id], a.Registry); err != nil {
			lines = append(lines, fmt.Sprintf("agent %s will be skipped: %v", id, err))
		}
		for _, err := range kit.Check(a.Home.Dir, agents[id].Dir) {
			lines = append(lines, fmt.Sprintf("agent %s: %v", id, err))
		}
	}
	return lines
}

// MCPReport is what crew doctor says of each MCP server of config.yaml
// (mcp.Report): as the running server has them when one runs, else as
// they answer now. What it says is redacted with r, the home's secrets.
func MCPReport(ctx context.Context, h *home.Home, r *events.Redactor, getenv func(string) string) []string {
	servers, problems := MCPServers(h, r, getenv)
	// The stdio servers start as serve starts them, in a sandbox of the
	// home's network policy (nil when config.yaml's is bad: none starts).
	box, _ := shell.New(h.Config.ShellNetwork())
	return mcp.Report(ctx, home.CrewVersion(), servers, problems, box, r, func(ctx context.Context) ([]mcp.State, bool) {
		c, err := ServerClient(h, h.Dir, getenv)
		if err != nil {
			return nil, false
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		states, err := c.MCP(ctx)
		return states, err == nil
	})
}

// StoreReport is doctor's lines on the event store and the projections'
// lag, from the running server when there is one, else by opening the
// store.
func StoreReport(ctx context.Context, dir string, h *home.Home) (lines []string) {
	w := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	if h.Config.NATS.URL != "" {
		w("event log: NATS %s: %s", events.RedactURL(h.Config.NATS.URL), ClusterReport(ctx, h.Config))
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
		return append(lines, ServerHealth(ctx, info.URL)...)
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
	for _, p := range projections.All() {
		cp, err := projections.Checkpoint(a.DB(), p.Name())
		if err != nil {
			w("  projection %s: %v", p.Name(), err)
			continue
		}
		w("  projection %s: at %d, lag %d", p.Name(), cp, si.State.LastSeq-min(cp, si.State.LastSeq))
	}
	return lines
}

// RunningServer names where the running crew serve of the home listens
// and its real URL (what it wrote to data/serve.json at start, checked by
// asking it), "" when none answers there.
func RunningServer(ctx context.Context, dir string) string {
	info, err := home.ReadServeInfo(dir)
	if err != nil || info.URL == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, info.URL+"/healthz", nil)
	if err != nil {
		return ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	resp.Body.Close()
	listen := cmp.Or(info.Listen, "?")
	return fmt.Sprintf("server: crew serve (pid %d) listens on %s: %s", info.PID, listen, info.URL)
}
