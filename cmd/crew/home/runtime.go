package home

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/scheduler"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/loop/team"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/desktop"
	"github.com/my-agent-crew/crew/tools/mcp"
)

// What the loaded home gives the running server, in the shapes its
// packages take: config validated once here, never read by them.

// Providers are the model providers with the keys of the home's env file
// or the process environment (getenv).
func (h *Home) Providers(getenv func(string) string) *llm.Providers {
	return llm.NewProviders(llm.Config{
		OpenRouterAPIKey:  h.Getenv("OPENROUTER_API_KEY", getenv),
		OpenRouterBaseURL: h.Getenv("OPENROUTER_BASE_URL", getenv),
		OllamaHost:        h.Getenv("OLLAMA_HOST", getenv),
		Catalog:           h.Config.Catalog(),
	})
}

// Models is the process's model cache over Providers, and the routes that
// override every agent's (llm.Override: MY_AGENT_ROUTES, or fake:echo with
// no provider reachable) with the note serve prints about it.
func (h *Home) Models(ctx context.Context, getenv func(string) string) (models *llm.Models, override []string, note string, err error) {
	providers := h.Providers(getenv)
	override, note, err = llm.Override(ctx, providers, func(k string) string { return h.Getenv(k, getenv) })
	return llm.NewModels(providers), override, note, err
}

// LoopAgents maps the loaded agent configs to what the loop needs:
// override, when set, replaces every agent's routes, and defaults is what
// an agent gets whose agent.yaml lists no tools (the registry's Defaults).
func (h *Home) LoopAgents(override, defaults []string) map[string]loop.Agent {
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
		names = h.withBrowser(a, names)
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
			Policy: tools.AgentPolicy{
				ShellAskPatterns: a.ShellAskPatterns, ShellAllowPatterns: a.ShellAllowPatterns, ShellDenyPatterns: a.ShellDenyPatterns,
				ShellNetwork: a.ShellNetwork, ShellWritePaths: a.ShellWritePaths,
				Browser: a.Browser, BrowserHosts: a.BrowserHosts, BrowserAskPatterns: a.BrowserAskPatterns,
				ComputerApps: a.ComputerApps,
			},
		}
	}
	return out
}

// envRef is a ${VAR} in an MCP header value.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// MCPServers are config.yaml's mcp_servers for the MCP pool, sorted by
// name, their header values' ${VAR} taken from the env file or getenv. A
// server whose header names a variable that is set nowhere is left out,
// with a problem saying which. Every value resolved is added to r.
func (h *Home) MCPServers(r *events.Redactor, getenv func(string) string) (servers []mcp.Server, problems []string) {
	names := slices.Sorted(maps.Keys(h.Config.MCPServers))
	for _, name := range names {
		c := h.Config.MCPServers[name]
		s := mcp.Server{Name: name, URL: c.URL, ReadOnly: c.ReadOnlyTools, Hidden: c.HiddenTools, AutonomousRun: c.Autonomous == "run",
			Timeout: time.Duration(c.TimeoutSeconds) * time.Second, Headers: map[string]string{}}
		var missing []string
		resolve := func(v string) string {
			return envRef.ReplaceAllStringFunc(v, func(ref string) string {
				name := envRef.FindStringSubmatch(ref)[1]
				val := h.Getenv(name, getenv)
				if val == "" {
					missing = append(missing, name)
				} else if len(val) >= events.MinEnvFileSecret {
					r.Add(name, val) // also when it came from a process variable whose name does not look secret
				}
				return val
			})
		}
		for k, v := range c.Headers {
			s.Headers[k] = resolve(v)
			if len(s.Headers[k]) >= events.MinEnvFileSecret {
				r.Add("mcp_servers."+name+".headers."+k, s.Headers[k])
			}
		}
		if c.URL != "" {
			s.TokenFile = h.MCPTokenFile(name)
			mcp.TeachGrant(s.TokenFile, name, r)
		}
		if o := c.OAuth; o != nil {
			s.OAuth = &mcp.OAuth{ClientID: o.ClientID, ClientSecret: resolve(o.ClientSecret), Scopes: o.Scopes}
			if len(s.OAuth.ClientSecret) >= events.MinEnvFileSecret {
				r.Add("mcp_servers."+name+".oauth.client_secret", s.OAuth.ClientSecret)
			}
		}
		if len(c.Command) > 0 {
			s.Stdio = h.stdio(name, c)
			for _, k := range slices.Sorted(maps.Keys(c.Env)) {
				v := resolve(c.Env[k])
				if len(v) >= events.MinEnvFileSecret {
					r.Add("mcp_servers."+name+".env."+k, v) // env values never reach the log
				}
				s.Stdio.Env = append(s.Stdio.Env, k+"="+v)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			key := "headers"
			if len(c.Command) > 0 {
				key = "env"
			} else if c.OAuth != nil && strings.Contains(c.OAuth.ClientSecret, "${") {
				key = "headers or oauth.client_secret"
			}
			problems = append(problems, fmt.Sprintf("%s: mcp_servers.%s.%s: %s not set in %s or the environment; the server is not used",
				filepath.Join(h.Dir, "config.yaml"), name, key, strings.Join(slices.Compact(missing), ", "), filepath.Join(h.Dir, "env")))
			continue
		}
		servers = append(servers, s)
	}
	return servers, problems
}

// MCPNames are the servers of config.yaml mcp_servers, sorted.
func (h *Home) MCPNames() []string { return slices.Sorted(maps.Keys(h.Config.MCPServers)) }

// MCPTokenFile is where crew mcp login keeps the grant of the remote
// server name: the home's secret area, mode 0600 in a 0700 folder.
func (h *Home) MCPTokenFile(name string) string {
	return filepath.Join(h.Dir, "secrets", "mcp", name+".json")
}

// stdio is a stdio entry's start: its paths made absolute against the
// home, its working directory <home>/mcp/<name> unless set.
func (h *Home) stdio(name string, c MCPServer) *mcp.Stdio {
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return filepath.Join(h.Dir, p)
	}
	st := &mcp.Stdio{Command: c.Command, Dir: filepath.Join(h.Dir, "mcp", name), Home: h.Dir, Network: c.Network}
	if c.Cwd != "" {
		st.Dir = abs(c.Cwd)
	}
	for _, p := range c.Paths {
		st.Paths = append(st.Paths, abs(p))
	}
	for _, p := range c.ReadPaths {
		st.ReadPaths = append(st.ReadPaths, abs(p))
	}
	return st
}

// ProfileJobs are the enabled schedules: of the agents in loaded, as the
// scheduler's jobs.
func (h *Home) ProfileJobs(loaded map[string]loop.Agent) []scheduler.Job {
	var jobs []scheduler.Job
	for id, a := range h.Agents {
		if _, ok := loaded[id]; !ok {
			continue
		}
		for _, sc := range a.Schedules {
			if !sc.On() {
				continue
			}
			jobs = append(jobs, scheduler.Job{
				ID: scheduler.ProfileJobID(id, sc.Name), Agent: id, Name: sc.Name, Cron: sc.Cron, Prompt: sc.Prompt, Command: sc.Command,
				Script: sc.Script, ThenPrompt: sc.ThenPrompt, ApprovalTTLSeconds: sc.ApprovalTTLSeconds, Consolidate: sc.Consolidate,
			})
		}
	}
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].ID < jobs[j].ID })
	return jobs
}

// DisabledJobs are the schedules of the loaded agents written down with
// enabled: false, as jobs (listed, not run).
func (h *Home) DisabledJobs(loaded map[string]loop.Agent) []scheduler.Job {
	var jobs []scheduler.Job
	for id, a := range h.Agents {
		if _, ok := loaded[id]; !ok {
			continue
		}
		for _, sc := range a.Schedules {
			if sc.On() {
				continue
			}
			jobs = append(jobs, scheduler.Job{
				ID: scheduler.ProfileJobID(id, sc.Name), Agent: id, Name: sc.Name, Cron: sc.Cron, Prompt: sc.Prompt, Command: sc.Command,
				Script: sc.Script, ThenPrompt: sc.ThenPrompt, ApprovalTTLSeconds: sc.ApprovalTTLSeconds, Consolidate: sc.Consolidate,
			})
		}
	}
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].ID < jobs[j].ID })
	return jobs
}

// EnabledSchedules names the enabled schedules of agent id, for the
// roster.
func (h *Home) EnabledSchedules(id string) []string {
	var names []string
	if cfg := h.Agents[id]; cfg != nil {
		for _, sc := range cfg.Schedules {
			if sc.On() {
				names = append(names, sc.Name)
			}
		}
	}
	return names
}

// envSettings are the <home>/env variables that hold addresses and routes,
// not secrets: redacting them would hide which model or host answered.
// One that carries credentials (user:password@host) is a secret again.
var envSettings = map[string]bool{"OLLAMA_HOST": true, "OPENROUTER_BASE_URL": true, "MY_AGENT_ROUTES": true}

// EnvSecrets is the env file less its plain settings: what the redactor
// must never let out (the home's redactor, LoadSecrets).
func (h *Home) EnvSecrets() map[string]string {
	out := make(map[string]string, len(h.Env))
	for k, v := range h.Env {
		if !envSettings[k] || strings.Contains(v, "@") {
			out[k] = v
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
