package app

import (
	"context"
	"strings"

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

// loopAgents are the loaded agents as the loop runs them
// (loop.Agent.Running of what agent.yaml says): override, when set, for
// every agent's routes, defaults for the tools of one whose agent.yaml
// lists none (the registry's Defaults), and the tools its browser:, team:
// and computer: keys give.
func loopAgents(h *home.Home, override, defaults []string) map[string]loop.Agent {
	out := map[string]loop.Agent{}
	for id, a := range h.Agents {
		out[id] = a.Agent.Running(override, defaults, browser.Grant(h.Config.BrowserEnabled, a.Policy.Browser), team.Grant(a.Leads()), desktop.Grant(a.ComputerOn()))
	}
	return out
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
