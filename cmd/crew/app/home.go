package app

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/loop/team"
	"github.com/my-agent-crew/crew/projections/search"
	"github.com/my-agent-crew/crew/tools/browser"
	"github.com/my-agent-crew/crew/tools/desktop"
	"github.com/my-agent-crew/crew/tools/mcp"
)

// What the loaded home gives the running crew, in the shapes its packages
// take: the home says what is configured (cmd/crew/home), the App builds
// from it what runs.

// Providers are the model providers with the keys of the home's env file
// or the process environment (getenv).
func Providers(h *home.Home, getenv func(string) string) *llm.Providers {
	return llm.NewProviders(llm.Env(h.Lookup(getenv), h.Config.Catalog()))
}

// models is the process's model cache over Providers, and the routes that
// override every agent's (llm.Override: MY_AGENT_ROUTES, or fake:echo with
// no provider reachable) with the note serve prints about it.
func models(ctx context.Context, h *home.Home, getenv func(string) string) (m *llm.ModelCache, override []string, note string, err error) {
	providers := Providers(h, getenv)
	override, note, err = llm.Override(ctx, providers, h.Lookup(getenv))
	return llm.NewModelCache(providers), override, note, err
}

// loopAgents maps the loaded agent configs to what the loop needs:
// override, when set, replaces every agent's routes, and defaults is what
// an agent gets whose agent.yaml lists no tools (the registry's Defaults).
func loopAgents(h *home.Home, override, defaults []string) map[string]loop.Agent {
	out := map[string]loop.Agent{}
	for id, a := range h.Agents {
		routes := a.Routes
		if override != nil {
			routes = override
		}
		names := a.Tools
		if len(names) == 0 {
			names = defaults
		}
		names = withBrowser(h, a, names)
		if a.Leads() {
			names = withTools(names, team.LeadTools)
		}
		if a.ComputerOn() { // by computer: "on", never by tools:
			names = withTools(names, desktop.Names)
		}
		out[id] = loop.Agent{
			ID: id, Name: cmp.Or(a.Name, id), Description: a.Description, Dir: a.Dir, Workspace: filepath.Join(a.Dir, "workspace"),
			Routes: routes, EscalationRoute: a.EscalationRoute, VisionRoutes: a.VisionRoutes, Tools: names,
			Autonomous: a.Autonomous, MaxSteps: a.MaxSteps, CostCapUSD: a.CostCapUSD,
			ToolOutputChars: a.ToolOutputChars, ApprovalTTL: a.EffectiveApprovalTTL(h.Config),
			TelegramApprovalTTL: time.Duration(max(a.Telegram.ApprovalTTLSeconds, 0)) * time.Second,
			Delegates:           a.Delegates, MCP: a.MCP, ScriptCalls: a.ScriptCalls,
			Policy: a.Policy(),
		}
	}
	return out
}

// withTools is names with extra added, those it lacks, in order.
func withTools(names, extra []string) []string {
	out := slices.Clone(names)
	for _, n := range extra {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// withBrowser is names with the browser tools the agent's browser key
// gives, when config.yaml enables the browser and a Chromium is found on
// the PATH (browser.Find).
// Browser tools listed under tools: do not count: they come with the key.
func withBrowser(h *home.Home, a *home.Agent, names []string) []string {
	out := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return strings.HasPrefix(n, "browser_") })
	if !h.Config.BrowserEnabled || a.Browser == "" || browser.Find() == "" {
		return out
	}
	return append(out, browser.ToolNames(a.Browser)...)
}

// MCPServers are config.yaml's mcp_servers for the MCP pool
// (mcp.Servers), their ${VAR} taken from the env file or getenv.
func MCPServers(h *home.Home, r *events.Redactor, getenv func(string) string) (servers []mcp.Server, problems []string) {
	return mcp.Servers(h.Dir, h.Config.MCPServers, h.Lookup(getenv), r)
}

// embedder is the embedding route config.yaml names for recall, at its
// provider's address with its key (llm.Providers.Endpoint); nil when none
// is set (BM25 alone).
func embedder(h *home.Home, getenv func(string) string) *search.HTTPEmbedder {
	route := h.Config.Embeddings.Route
	provider, model, _ := strings.Cut(route, ":")
	base, key, ok := Providers(h, getenv).Endpoint(provider)
	if !ok || model == "" {
		return nil // the schema allows no other
	}
	return &search.HTTPEmbedder{Name: route, Model: model, BaseURL: base, APIKey: key, OpenAI: provider == llm.ProviderOpenRouter}
}
