package home

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/scheduler"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/tools/mcp"
	"github.com/my-agent-crew/crew/tools/shell"
	"github.com/my-agent-crew/crew/tools/web"
)

// Config is config.yaml. Keys and ranges are pinned by
// schemas/config.schema.json; a test keeps the two in sync.
type Config struct {
	Timezone           string `yaml:"timezone"`
	ApprovalTTLSeconds int    `yaml:"approval_ttl_seconds"`
	CanvasMaxBytes     int64  `yaml:"canvas_max_bytes"` // 0: the default, 1 GB
	// ConversationsInMemory bounds the idle conversation states kept
	// loaded (loop.Convs.SetIdleLimit); 0: the default.
	ConversationsInMemory int `yaml:"conversations_in_memory"`
	// TurnsInFlight bounds the turns running at once (the others wait
	// in order: loop.WorkerConfig.TurnsInFlight); 0: the default.
	TurnsInFlight int `yaml:"turns_in_flight"`
	// MemoryLimitMB is crew serve's soft memory limit in MiB
	// (MemoryLimit); 0: DefaultMemoryLimitMB.
	MemoryLimitMB int            `yaml:"memory_limit_mb"`
	NATS          NATSConfig     `yaml:"nats"`
	Listen        string         `yaml:"listen"`
	AuthToken     string         `yaml:"auth_token"`
	Web           WebConfig      `yaml:"web"`
	Telegram      TelegramConfig `yaml:"telegram"`
	// Models, keyed by route, says what the harness cannot ask the
	// provider: context window, reply limit, vision, prices.
	Models map[string]ModelConfig `yaml:"models"`
	// BrowserEnabled gives agents with browser: in agent.yaml the
	// browser tools.
	BrowserEnabled bool `yaml:"browser_enabled"`
	// WebSearch is the provider web_search asks.
	WebSearch WebSearch `yaml:"web_search"`
	// Embeddings is the route recall embeds with; unset: BM25 alone.
	Embeddings Embeddings `yaml:"embeddings"`
	// MCPServers are the MCP servers agents may use (agent.yaml mcp).
	MCPServers map[string]MCPServer `yaml:"mcp_servers"`
	// Budget is the crew's daily budget (R-X-5).
	Budget BudgetConfig `yaml:"budget"`
	// ShellPorts are the ports a shell command with network reaches
	// through the crew's proxy (public addresses only); empty: 80 and 443.
	ShellPorts []int `yaml:"shell_ports"`
	// ShellHosts, when set, are the only hosts (patterns such as
	// github.com or *.github.com) such a command reaches.
	ShellHosts []string `yaml:"shell_hosts"`

	loc *time.Location // resolved Timezone, set by Load
}

// DefaultMemoryLimitMB is crew serve's soft memory limit unless
// config.yaml memory_limit_mb says otherwise (docs/performance.md,
// "Memory").
const DefaultMemoryLimitMB = 256

// MemoryLimit is the soft memory limit crew serve gives the Go runtime
// (debug.SetMemoryLimit), in bytes: memory_limit_mb, else the default.
// It is 0 (leave the runtime's alone) when the process environment sets
// GOMEMLIMIT, which the runtime has read already and which wins.
func (c Config) MemoryLimit(getenv func(string) string) int64 {
	if getenv != nil && getenv("GOMEMLIMIT") != "" {
		return 0
	}
	mb := c.MemoryLimitMB
	if mb <= 0 {
		mb = DefaultMemoryLimitMB
	}
	return int64(mb) << 20
}

// ShellNetwork is what a shell command with network reaches
// (shell_ports, shell_hosts): the policy of the home's shell.Sandbox.
func (c Config) ShellNetwork() shell.Network {
	return shell.Network{Ports: c.ShellPorts, Hosts: c.ShellHosts}
}

// NATSConfig is the nats: block of config.yaml.
type NATSConfig struct {
	Sync   string `yaml:"sync"`   // "always" or "interval"
	Listen string `yaml:"listen"` // host:port to expose the embedded server; empty: in-process only
	// URL is an existing NATS server or cluster (comma-separated URLs)
	// used instead of the embedded server; Creds and the TLS files
	// (resolved against the home by Load) authenticate to it.
	URL     string `yaml:"url"`
	Creds   string `yaml:"creds"`
	TLSCA   string `yaml:"tls_ca"`
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
}

// Client is how to reach URL: its credentials and TLS files (a value;
// the App connects).
func (n NATSConfig) Client() events.ClientConfig {
	return events.ClientConfig{URL: n.URL, Creds: n.Creds, TLSCA: n.TLSCA, TLSCert: n.TLSCert, TLSKey: n.TLSKey}
}

// Store is where the home at homeDir keeps its log, as events.OpenStore
// takes it (a value; the App opens it): the embedded server under data/,
// or URL with this home's node id (data/node-id, made once).
func (n NATSConfig) Store(homeDir string) (events.StoreConfig, error) {
	c := events.StoreConfig{Dir: filepath.Join(homeDir, "data"), Client: n.Client(), Server: events.ServerConfig{Sync: n.Sync, Listen: n.Listen, CollectWhenQuiet: true}}
	if n.URL == "" {
		return c, nil
	}
	node, err := NodeID(homeDir)
	if err != nil {
		return c, fmt.Errorf("nats.url %s: %w", events.RedactURL(n.URL), err)
	}
	c.Node = node
	return c, nil
}

// WebConfig is the web: block of config.yaml.
type WebConfig struct {
	// Hosts are the names (or name:port) the web UI answers to besides
	// 127.0.0.1, localhost and [::1]; they need an auth token.
	Hosts []string `yaml:"hosts"`
}

// TelegramConfig is the telegram: block of config.yaml. The bot token is a
// secret and lives in the env file (TELEGRAM_BOT_TOKEN), not here.
type TelegramConfig struct {
	APIURL string `yaml:"api_url"`
}

// ModelConfig is one models.<route> entry; an unset key keeps the built-in
// default for the route (llm.Catalog).
type ModelConfig struct {
	ContextWindow    *int     `yaml:"context_window"`
	MaxOutputTokens  *int     `yaml:"max_output_tokens"`
	Vision           *bool    `yaml:"vision"`
	InputUSDPerMTok  *float64 `yaml:"input_usd_per_mtok"`
	OutputUSDPerMTok *float64 `yaml:"output_usd_per_mtok"`
}

// BudgetConfig is the budget: block of config.yaml (R-X-5), in the
// budget ledger's own type (Home.Caps adds the agents' caps).
type BudgetConfig = budget.Caps

// Caps are the budgets config.yaml and the agents' agent.yaml set.
func (h *Home) Caps() budget.Caps {
	c := h.Config.Budget
	c.AgentDailyUSD = map[string]float64{}
	for id, a := range h.Agents {
		if a.DailyCapUSD > 0 {
			c.AgentDailyUSD[id] = a.DailyCapUSD
		}
	}
	return c
}

// WebSearch is the web_search: block of config.yaml: which provider the
// web_search tool asks, in the web tools' own type. Its API key, when it
// needs one, lives in the env file (BRAVE_API_KEY, TAVILY_API_KEY).
type WebSearch = web.SearchConfig

// Embeddings is the embeddings: block of config.yaml: the route recall
// embeds documents and queries with, "ollama:<model>" or
// "openrouter:<model>".
type Embeddings struct {
	Route string `yaml:"route"`
}

// MCPServer is one entry of config.yaml mcp_servers, in the MCP pool's
// own config type (url or command; the pool resolves it: mcp.Servers).
type MCPServer = mcp.Config

// Config defaults (R-HOME-6).
const (
	DefaultTimezone           = "UTC"
	DefaultApprovalTTLSeconds = 600
	DefaultNATSSync           = "always"
	DefaultListen             = "127.0.0.1:7420"
)

func defaultConfig() Config {
	return Config{
		Timezone:           DefaultTimezone,
		ApprovalTTLSeconds: DefaultApprovalTTLSeconds,
		NATS:               NATSConfig{Sync: DefaultNATSSync},
		Listen:             DefaultListen,
	}
}

// Location is the home time zone. It falls back to UTC for a Config that did
// not come from Load.
func (c *Config) Location() *time.Location {
	if c.loc != nil {
		return c.loc
	}
	if loc, err := time.LoadLocation(c.Timezone); err == nil && c.Timezone != "" {
		return loc
	}
	return time.UTC
}

// Agent is one agent.yaml. ID, Dir and Workspace come from where the file
// lives, not from its content. Keys and ranges are pinned by
// schemas/agent.schema.json.
type Agent struct {
	// Agent are the keys the loop reads (routes, tools, max_steps, the
	// shell, browser and computer_apps policy, …), in the loop's own type;
	// its ID, Dir, Workspace and approval lifetimes are set at load.
	loop.Agent `yaml:",inline"`

	Team               string        `yaml:"team"`                 // "lead", "none"; empty: lead for the master
	DailyCapUSD        float64       `yaml:"daily_cap_usd"`        // per day (the owner's); 0: none
	ApprovalTTLSeconds int           `yaml:"approval_ttl_seconds"` // 0: inherit from config.yaml
	Schedules          []Schedule    `yaml:"schedules"`
	Telegram           AgentTelegram `yaml:"telegram"`
	// Computer "on" gives the agent the four computer_* tools (R-DSK);
	// computer_apps are the apps computer_act may touch.
	Computer string `yaml:"computer"`
}

// ComputerOn reports whether agent.yaml says computer: "on".
func (a *Agent) ComputerOn() bool { return a.Computer == "on" }

// Schedule is one entry of schedules: in agent.yaml, in the scheduler's
// own config type (scheduler.Profile makes its jobs).
type Schedule = scheduler.Schedule

// AgentTelegram is the telegram: block of agent.yaml.
type AgentTelegram struct {
	AllowedChatIDs     []int64 `yaml:"allowed_chat_ids"`
	ApprovalTTLSeconds int     `yaml:"approval_ttl_seconds"` // 0: inherit from the agent
}

// Agent defaults (R-HOME-6).
const (
	DefaultMaxSteps        = 12
	DefaultCostCapUSD      = 0.50
	DefaultToolOutputChars = 8000
)

// Leads reports whether the agent leads teams (R-TEAM): team: lead, or
// the master unless team: none.
func (a *Agent) Leads() bool { return a.Team == "lead" || (a.Team == "" && a.ID == MasterID) }

// MasterID is the id of the agent at the home root.
const MasterID = "master"

func defaultAgent() Agent {
	return Agent{Agent: loop.Agent{
		MaxSteps:        DefaultMaxSteps,
		CostCapUSD:      DefaultCostCapUSD,
		ToolOutputChars: DefaultToolOutputChars,
	}}
}

// EffectiveApprovalTTL resolves the approval TTL of the agent: its own value
// when set, else the home-wide one from config.yaml.
func (a *Agent) EffectiveApprovalTTL(c *Config) time.Duration {
	secs := a.ApprovalTTLSeconds
	if secs == 0 {
		secs = c.ApprovalTTLSeconds
	}
	if secs == 0 {
		secs = DefaultApprovalTTLSeconds
	}
	return time.Duration(secs) * time.Second
}
