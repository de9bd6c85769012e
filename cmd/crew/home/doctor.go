package home

import (
	"fmt"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/llm"
	"io/fs"
	"maps"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
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

// AgentsLoaded is doctor's lines on the agents loaded and on those
// skipped, each with why.
func (h *Home) AgentsLoaded() []string {
	lines := []string{"agents: " + strings.Join(slices.Sorted(maps.Keys(h.Agents)), ", ")}
	for _, p := range h.Problems {
		lines = append(lines, fmt.Sprintf("  skipped: %v", p))
	}
	return lines
}

// StoreFiles names the home's event store, its size on disk, and the
// projections database; only the database with nats.url (the log is on
// that server).
func (h *Home) StoreFiles() string {
	db := filepath.Join(h.Dir, "data", "projections.db")
	if h.Config.NATS.URL != "" {
		return "projections: " + db
	}
	natsDir := filepath.Join(h.Dir, "data", "nats")
	return fmt.Sprintf("event store: %s (%s on disk), projections: %s", natsDir, events.HumanBytes(dirSize(natsDir)), db)
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

// CrewVersion is this build's module version, as MCP servers are told it.
func CrewVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}
