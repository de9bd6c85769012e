package home

import (
	"context"
	"errors"
	"fmt"
	"github.com/my-agent-crew/crew/loop/llm"
	"io/fs"
	"maps"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/kit"
	"github.com/my-agent-crew/crew/tools/mcp"
	"github.com/my-agent-crew/crew/tools/shell"
)

// What crew doctor reports, one report line per string; doctor prints
// them. None of them names a secret's value.

// coreModules are the design card's dependencies, reported by doctor.
var coreModules = []string{
	"github.com/nats-io/nats-server/v2", "github.com/nats-io/nats.go", "go.etcd.io/bbolt",
	"github.com/goccy/go-yaml", "github.com/go-co-op/gocron/v2", "github.com/chromedp/chromedp",
	"github.com/tmc/langchaingo", "github.com/a-h/templ",
}

// Versions are the Go and crew versions and those of the core modules.
func Versions() []string {
	head := fmt.Sprintf("versions: %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return []string{head}
	}
	lines := []string{head + ", crew " + moduleVersion(bi)}
	have := map[string]string{}
	for _, d := range bi.Deps {
		have[d.Path] = d.Version
	}
	for _, m := range coreModules {
		if v, ok := have[m]; ok {
			lines = append(lines, fmt.Sprintf("  %s %s", m, v))
		}
	}
	return lines
}

func moduleVersion(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " (" + s.Value[:12] + ")"
		}
	}
	return v
}

// StoreFiles names the event store of the home at dir, its size on disk,
// and the projections database.
func StoreFiles(dir string) string {
	natsDir := filepath.Join(dir, "data", "nats")
	return fmt.Sprintf("event store: %s (%s on disk), projections: %s", natsDir, HumanBytes(dirSize(natsDir)), filepath.Join(dir, "data", "projections.db"))
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
		lines = append(lines, fmt.Sprintf("  projection %s: at %d, lag %d%s", p.Name, p.Checkpoint, p.Lag, errSuffix(p.Error)))
	}
	if t := health.Turns; t != nil {
		lines = append(lines, TurnsLine(*t))
	}
	return lines
}

func errSuffix(s string) string {
	if s == "" {
		return ""
	}
	return ", stopped: " + s
}

// NATSAccess says how to inspect the embedded server with the nats CLI.
func (h *Home) NATSAccess() []string {
	if h.Config.NATS.URL != "" {
		return []string{"nats CLI: nats --server <one of nats.url> stream info CREW   (with the same credentials)"}
	}
	if h.Config.NATS.Listen == "" {
		return []string{
			"nats CLI: the embedded server is in-process only; to inspect it, set nats.listen: 127.0.0.1:4222 in config.yaml, restart, then",
			"  go install github.com/nats-io/natscli/nats@v0.5.0 && nats --server nats://127.0.0.1:4222 stream info CREW",
		}
	}
	return []string{fmt.Sprintf("nats CLI: nats --server nats://%s stream info CREW   (or: stream view CREW, sub 'crew.conv.>')", h.Config.NATS.Listen)}
}

// ShellProtections lists each protection of shell commands and hooks, and
// whether this kernel gives it (each proven by running a command), under
// the network policy of config.yaml (shell_ports, shell_hosts).
func (h *Home) ShellProtections() []string {
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

// Routes are the model routes of each agent and whether the provider
// settings are there (never their values).
func (h *Home) Routes(getenv func(string) string) []string {
	lines := []string{"model routes:"}
	if r := h.Getenv("MY_AGENT_ROUTES", getenv); r != "" {
		lines = append(lines, fmt.Sprintf("  MY_AGENT_ROUTES=%s overrides every agent", r))
	}
	ids := slices.Sorted(maps.Keys(h.Agents))
	for _, id := range ids {
		lines = append(lines, fmt.Sprintf("  %s: routes %s", id, strings.Join(h.Agents[id].Routes, ", ")))
	}
	key := "not set"
	if h.Getenv("OPENROUTER_API_KEY", getenv) != "" {
		key = "set"
	}
	ollama := h.Getenv("OLLAMA_HOST", getenv)
	if ollama == "" {
		ollama = "not set"
	}
	lines = append(lines, fmt.Sprintf("  OPENROUTER_API_KEY %s, OLLAMA_HOST %s", key, ollama))
	return append(lines, h.routeSpecs(getenv)...)
}

// routeSpecs says, for each route an agent may call, its window, whether
// the prompt is cached, and where its price comes from (R-LOOP-7, R-X-5).
func (h *Home) routeSpecs(getenv func(string) string) []string {
	seen := map[string]bool{}
	var routes []string
	add := func(rs ...string) {
		for _, r := range rs {
			if r = strings.TrimSpace(r); r != "" && !seen[r] {
				seen[r] = true
				routes = append(routes, r)
			}
		}
	}
	add(strings.Split(h.Getenv("MY_AGENT_ROUTES", getenv), ",")...)
	for _, id := range slices.Sorted(maps.Keys(h.Agents)) {
		a := h.Agents[id]
		add(a.Routes...)
		add(a.EscalationRoute)
		add(a.VisionRoutes...)
	}
	cat := h.Config.Catalog()
	var lines []string
	for _, route := range routes {
		spec := cat.Lookup(route)
		r, err := llm.ParseRoute(route)
		if err != nil {
			continue
		}
		cache := "off (the provider caches nothing we know of)"
		switch spec.Cache {
		case llm.CacheBreakpoints:
			cache = "on (cache_control breakpoints)"
		case llm.CacheAutomatic:
			cache = "on (the provider's automatic prefix cache)"
		}
		if r.Provider == llm.ProviderFake {
			cache = "n/a"
		}
		var price string
		switch {
		case spec.Price != nil && *spec.Price == (llm.Price{}):
			price = "free"
		case spec.Price != nil:
			price = fmt.Sprintf("$%g in / $%g out per Mtok", spec.Price.InputPerMTok, spec.Price.OutputPerMTok)
		case r.Provider == llm.ProviderOpenRouter:
			price = "not in the catalog: each call reserves budget.unknown_call_usd and settles to the cost OpenRouter reports"
		default:
			price = "unknown: each call holds budget.unknown_call_usd (set a price in models:)"
		}
		window := fmt.Sprintf("window %d tokens (max output %d)", spec.ContextWindow, spec.MaxOutputTokens)
		if r.Provider == llm.ProviderOllama {
			window += fmt.Sprintf(", sent as num_ctx %d", spec.ContextWindow)
		}
		lines = append(lines, fmt.Sprintf("  %s: %s; prompt caching %s; price %s", route, window, cache, price))
	}
	return lines
}

// AgentChecks runs the checks serve makes before it runs an agent
// (routes, tool names, shell patterns) against the tools of reg, so a
// skipped agent shows in doctor too.
func (h *Home) AgentChecks(reg *tools.Registry) []string {
	var lines []string
	agents := h.LoopAgents(nil, reg.Defaults())
	ids := slices.Sorted(maps.Keys(agents))
	for _, id := range ids {
		if err := loop.CheckAgent(agents[id], reg); err != nil {
			lines = append(lines, fmt.Sprintf("agent %s will be skipped: %v", id, err))
		}
		for _, err := range kit.Check(h.Dir, agents[id].Dir) {
			lines = append(lines, fmt.Sprintf("agent %s: %v", id, err))
		}
	}
	return lines
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// HumanBytes writes n in B, KiB, MiB or GiB.
func HumanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// CrewVersion is this build's module version, as MCP servers are told it.
func CrewVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}

// MCPReport is what crew doctor says of each MCP server of config.yaml:
// as the running server has them (state, tools, restarts, how the last
// process ended) when one runs, else whether each answers, how many tools
// it offers and which the owner made read-only. What it says is redacted
// with r, the home's secrets.
func (h *Home) MCPReport(ctx context.Context, r *events.Redactor, getenv func(string) string) []string {
	servers, problems := h.MCPServers(r, getenv)
	if len(servers) == 0 && len(problems) == 0 {
		return []string{"MCP servers: none declared (config.yaml mcp_servers)"}
	}
	if c, err := h.ServerClient(h.Dir, getenv); err == nil {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		states, err := c.MCP(ctx)
		cancel()
		if err == nil {
			lines := []string{"MCP servers (as the running crew serve has them):"}
			for _, st := range states {
				l := fmt.Sprintf("  %s (%s %s): %s", st.Name, st.Transport, st.Where, st.State)
				if st.State == "needs login" {
					l = fmt.Sprintf("  %s (%s %s): %s", st.Name, st.Transport, st.Where, st.Error)
				} else if st.Error != "" {
					l += ": " + st.Error
				}
				if st.State != "not started" {
					l += fmt.Sprintf(", %d tools", st.Tools)
				}
				if st.Transport == "stdio" {
					switch st.Restarts {
					case 0:
						l += ", never restarted"
					case 1:
						l += ", restarted once"
					default:
						l += fmt.Sprintf(", restarted %d times", st.Restarts)
					}
					if st.LastEnded != "" {
						l += " (last process: " + st.LastEnded + ")"
					}
				}
				lines = append(lines, l)
			}
			for _, p := range problems {
				lines = append(lines, "  "+p)
			}
			return lines
		}
	}
	lines := []string{"MCP servers:"}
	// The stdio servers start as serve starts them, in a sandbox of the
	// home's network policy (nil when config.yaml's is bad: none starts).
	box, _ := shell.New(h.Config.ShellNetwork())
	pool := mcp.NewPool(CrewVersion(), servers, box, nil)
	pool.Redact(r)
	defer pool.Close()
	for _, st := range pool.Status(ctx) {
		var nl mcp.NeedsLogin
		if errors.As(st.Err, &nl) {
			lines = append(lines, fmt.Sprintf("  %s (%s %s): needs login: run crew mcp login %s", st.Name, st.Transport, st.URL, st.Name))
			continue
		}
		if st.Err != nil {
			lines = append(lines, fmt.Sprintf("  %s (%s %s): does not answer: %v", st.Name, st.Transport, st.URL, st.Err))
			continue
		}
		if st.LoggedIn {
			st.Problems = append([]string{"logged in (OAuth; crew mcp logout " + st.Name + " revokes it)"}, st.Problems...)
		}
		ro := "none"
		if len(st.ReadOnly) > 0 {
			ro = strings.Join(st.ReadOnly, ", ")
		}
		lines = append(lines, fmt.Sprintf("  %s (%s %s): answers, %d tools (%d hidden), read-only: %s", st.Name, st.Transport, st.URL, len(st.Tools), st.Hidden, ro))
		for _, p := range st.Problems {
			lines = append(lines, "    "+p)
		}
	}
	for _, p := range problems {
		lines = append(lines, "  "+p)
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
