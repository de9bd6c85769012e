package home

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Each case breaks one file of a fresh home and pins the whole one-line
// message; %s stands for the absolute path of the file.
func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		file    string // relative to the home
		content string
		want    string
		key     string
	}{
		{"yaml syntax", "config.yaml",
			"timezone: UTC\nnats: [always\n",
			`%s:2:7: syntax error: sequence end token ']' not found`, ""},
		{"duplicate key", "config.yaml",
			"listen: 127.0.0.1:1\nlisten: 127.0.0.1:2\n",
			`%s:2:1: syntax error: mapping key "listen" already defined at [1:1]`, ""},
		{"unknown key with suggestion", "agent.yaml",
			"name: x\nmax_step: 3\n",
			`%s:2:1: unknown key "max_step" (did you mean "max_steps"?)`, "max_step"},
		{"unknown nested key", "agent.yaml",
			"name: x\ntelegram:\n  # chats\n  alowed_chat_ids: [1]\n",
			`%s:4:3: unknown key "telegram.alowed_chat_ids" (did you mean "telegram.allowed_chat_ids"?)`, "telegram.alowed_chat_ids"},
		{"unknown key of the inlined policy", "agent.yaml",
			"name: x\nshell_alow_patterns: ['^ls']\n",
			`%s:2:1: unknown key "shell_alow_patterns" (did you mean "shell_allow_patterns"?)`, "shell_alow_patterns"},
		{"unknown key by prefix", "agent.yaml",
			"name: x\ncost_cap: 1\n",
			`%s:2:1: unknown key "cost_cap" (did you mean "cost_cap_usd"?)`, "cost_cap"},
		{"unknown key without suggestion", "config.yaml",
			"colour: blue\n",
			`%s:1:1: unknown key "colour"`, "colour"},
		{"wrong type", "agent.yaml",
			"name: x\nmax_steps: \"ten\"\n",
			`%s:2:12: max_steps: must be an integer, got "ten"`, "max_steps"},
		{"wrong type bool", "agent.yaml",
			"name: x\nshell_network: yes\n",
			`%s:2:16: shell_network: must be true or false, got "yes"`, "shell_network"},
		{"enum", "config.yaml",
			"nats: {sync: sometimes}\n",
			`%s:1:14: nats.sync: must be one of "always", "interval", got "sometimes"`, "nats.sync"},
		{"out of range", "agent.yaml",
			"name: x\nmax_steps: 500\n",
			`%s:2:12: max_steps: must be <= 200, got 500`, "max_steps"},
		{"ttl 0 or range", "agent.yaml",
			"name: x\nschedules:\n  - name: daily\n    cron: '@daily'\n    prompt: hi\n    approval_ttl_seconds: 30\n",
			`%s:6:27: schedules[0].approval_ttl_seconds: must be 0 or >= 60, got 30`, "schedules[0].approval_ttl_seconds"},
		{"web.hosts port range", "config.yaml",
			"web:\n  hosts: [crew.example.com, box.lan:99999]\n",
			`%s:2:29: web.hosts[1]: port must be 1..65535, got "99999"`, "web.hosts[1]"},
		{"shell_ports range", "config.yaml",
			"shell_ports: [443, 70000]\n",
			`%s:1:20: shell_ports[1]: must be <= 65535, got 70000`, "shell_ports[1]"},
		{"shell_ports empty", "config.yaml",
			"shell_ports: []\n",
			`%s:1:14: shell_ports: must be a list of at least 1 (leave the key out for the default), got an empty list`, "shell_ports"},
		{"shell_hosts URL", "config.yaml",
			"shell_hosts:\n  - github.com\n  - https://pypi.org/simple\n",
			`%s:3:5: shell_hosts[1]: must be a host such as github.com, *.github.com or an IP address (no scheme, port or path), got "https://pypi.org/simple"`, "shell_hosts[1]"},
		{"config ttl range", "config.yaml",
			"approval_ttl_seconds: 10\n",
			`%s:1:23: approval_ttl_seconds: must be >= 60, got 10`, "approval_ttl_seconds"},
		{"route pattern", "agent.yaml",
			"name: x\nroutes: [fake:echo, gpt4]\n",
			`%s:2:21: routes[1]: must be provider:model with provider openrouter, ollama or fake, got "gpt4"`, "routes[1]"},
		{"required", "agent.yaml",
			"description: no name\n",
			`%s:1:1: missing required key "name"`, "name"},
		{"not a mapping", "agent.yaml",
			"- name: x\n",
			`%s:1:1: top level: must be a mapping, got a list`, ""},
		{"two documents", "agent.yaml",
			"name: x\n---\nname: y\n",
			`%s:2:1: found 2 YAML documents, want one`, ""},
		{"time zone", "config.yaml",
			"timezone: Mars/Olympus\n",
			`%s:1:11: timezone: unknown time zone "Mars/Olympus" (want an IANA name such as Europe/Berlin)`, "timezone"},
		{"nats.url port", "config.yaml",
			"nats:\n  url: nats://n1:4222,nats://u:pw@n2:99999\n",
			`%s:2:8: nats.url: nats://u:xxxxx@n2:99999: port must be 1..65535, got "99999"`, "nats.url"},
		{"nats.url scheme", "config.yaml",
			"nats:\n  url: http://n1:4222\n",
			`%s:2:8: nats.url: must be text matching "^(nats|tls)://[^,\\s]+(,(nats|tls)://[^,\\s]+)*$", got "http://n1:4222"`, "nats.url"},
		{"nats.creds without url", "config.yaml",
			"nats:\n  creds: crew.creds\n",
			`%s:2:10: nats.creds: only with nats.url`, "nats.creds"},
		{"nats.creds missing", "config.yaml",
			"nats:\n  url: nats://n1:4222\n  creds: none.creds\n",
			`%s:3:10: nats.creds: stat %h/none.creds: no such file or directory`, "nats.creds"},
		{"nats.listen with url", "config.yaml",
			"nats:\n  url: nats://n1:4222\n  listen: 127.0.0.1:4222\n",
			`%s:3:11: nats.listen: exposes the embedded server, which does not run with nats.url; remove one of them`, "nats.listen"},
		{"mcp server without url or command", "config.yaml",
			"mcp_servers:\n  notes:\n    read_only_tools: [search]\n",
			`%s:3:5: mcp_servers.notes: set url (a streamable HTTP server) or command (a stdio server the crew starts)`, "mcp_servers.notes"},
		{"mcp server url and command", "config.yaml",
			"mcp_servers:\n  notes:\n    url: http://127.0.0.1:3001/mcp\n    command: [node, s.js]\n",
			`%s:4:14: mcp_servers.notes: set url or command, not both`, "mcp_servers.notes.command"},
		{"mcp http server with stdio keys", "config.yaml",
			"mcp_servers:\n  notes:\n    url: http://127.0.0.1:3001/mcp\n    paths: [workspace]\n",
			`%s:4:12: mcp_servers.notes.paths: only for a stdio server (command), not with url`, "mcp_servers.notes.paths"},
		{"mcp stdio server with headers", "config.yaml",
			"mcp_servers:\n  files:\n    command: [node, s.js]\n    headers: {A: b}\n",
			`%s:4:14: mcp_servers.files.headers: only with url; a stdio server gets its secrets through env`, "mcp_servers.files.headers"},
		{"mcp stdio server with oauth", "config.yaml",
			"mcp_servers:\n  files:\n    command: [node, s.js]\n    oauth: {client_id: crew}\n",
			`%s:4:12: mcp_servers.files.oauth: only with url; a stdio server logs in through its env`, "mcp_servers.files.oauth"},
		{"mcp oauth secret without client id", "config.yaml",
			"mcp_servers:\n  remote:\n    url: https://mcp.example.com/mcp\n    oauth:\n      client_secret: ${REMOTE_SECRET}\n",
			`%s:5:22: mcp_servers.remote.oauth.client_secret: set client_id too (the secret is of that client)`, "mcp_servers.remote.oauth.client_secret"},
		{"mcp oauth unknown key", "config.yaml",
			"mcp_servers:\n  remote:\n    url: https://mcp.example.com/mcp\n    oauth:\n      clientid: crew\n",
			`%s:5:7: unknown key "mcp_servers.remote.oauth.clientid" (did you mean "mcp_servers.remote.oauth.client_id"?)`, "mcp_servers.remote.oauth.clientid"},
		{"mcp oauth scopes", "config.yaml",
			"mcp_servers:\n  remote:\n    url: https://mcp.example.com/mcp\n    oauth: {client_id: crew, scopes: [read write]}\n",
			`%s:4:39: mcp_servers.remote.oauth.scopes[0]: must be text matching "^[^\\s]+$", got "read write"`, "mcp_servers.remote.oauth.scopes[0]"},
		{"listen port", "config.yaml",
			"listen: 127.0.0.1:99999\n",
			`%s:1:9: listen: port must be 1..65535, got "99999"`, "listen"},
		{"telegram api url", "config.yaml",
			"telegram:\n  api_url: ftp://x\n",
			`%s:2:12: telegram.api_url: must be an http:// or https:// URL, got "ftp://x"`, "telegram.api_url"},
		{"schedule kind", "agent.yaml",
			"name: x\nschedules:\n  - name: a\n    cron: '@daily'\n",
			`%s:3:5: schedules[0]: set exactly one of prompt, command, script or consolidate: true`, "schedules[0]"},
		{"schedule cron", "agent.yaml",
			"name: x\nschedules:\n  - name: a\n    cron: every day\n    prompt: hi\n",
			`%s:4:11: schedules[0].cron: invalid cron expression "every day": expected exactly 5 fields, found 2: [every day]`, "schedules[0].cron"},
		{"then_prompt without script", "agent.yaml",
			"name: x\nschedules:\n  - name: a\n    cron: '@daily'\n    prompt: hi\n    then_prompt: more\n",
			`%s:6:18: schedules[0].then_prompt: only allowed with script`, "schedules[0].then_prompt"},
		{"models key not a route", "config.yaml",
			"models:\n  fake:echo: {vision: true}\n  gpt4: {vision: true}\n",
			`%s:3:3: models: route "gpt4": want provider:model (provider openrouter, ollama or fake)`, "models.gpt4"},
		{"models route unknown provider", "config.yaml",
			"models:\n  acme:x: {vision: true}\n",
			`%s:2:3: models: route "acme:x": unknown provider "acme" (want openrouter, ollama or fake)`, "models.acme:x"},
		{"models reply above window", "config.yaml",
			"models:\n  ollama:tiny:\n    context_window: 2048\n    max_output_tokens: 4096\n",
			`%s:3:5: models.ollama:tiny: max_output_tokens 4096 must be below context_window 2048`, "models.ollama:tiny"},
		{"models negative price", "config.yaml",
			"models:\n  ollama:tiny: {input_usd_per_mtok: -1}\n",
			`%s:2:37: models.ollama:tiny.input_usd_per_mtok: must be >= 0, got -1`, "models.ollama:tiny.input_usd_per_mtok"},
		{"first error in file order", "agent.yaml",
			"name: x\nroutes: [gpt4]\nmax_steps: 0\n",
			`%s:2:10: routes[0]: must be provider:model with provider openrouter, ollama or fake, got "gpt4"`, "routes[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newHome(t)
			path := filepath.Join(dir, tt.file)
			writeFile(t, path, tt.content)
			err := loadErr(t, dir, tt.file)
			want := strings.ReplaceAll(strings.ReplaceAll(tt.want, "%s", path), "%h", filepath.Dir(path))
			if err == nil || err.Error() != want {
				t.Fatalf("error = %v\nwant    %s", err, want)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != tt.key || ce.File != path {
				t.Errorf("ConfigError = %+v, want Key %q File %q", ce, tt.key, path)
			}
		})
	}
}

// loadErr is the fatal error for config.yaml, the (only) problem for an agent.
func loadErr(t *testing.T, dir, file string) error {
	t.Helper()
	h, err := Load(dir)
	if file == "config.yaml" {
		return err
	}
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(h.Problems) != 1 {
		t.Fatalf("Problems = %v, want one", h.Problems)
	}
	if _, ok := h.Agents[MasterID]; ok {
		t.Errorf("broken master was loaded")
	}
	return h.Problems[0]
}

func TestMissingFiles(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(dir)
	want := filepath.Join(dir, "config.yaml") + `: missing (run "crew init")`
	if err == nil || err.Error() != want || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no config: %v, want %s (and ErrNotExist)", err, want)
	}

	dir = newHome(t)
	if err := os.MkdirAll(filepath.Join(dir, "agents", "coder"), 0o700); err != nil {
		t.Fatal(err)
	}
	h := mustLoad(t, dir)
	want = filepath.Join(dir, "agents", "coder", "agent.yaml") + ": missing"
	if len(h.Problems) != 1 || h.Problems[0].Error() != want {
		t.Errorf("Problems = %v, want [%s]", h.Problems, want)
	}
}

func TestBrokenAgentIsSkipped(t *testing.T) {
	dir := newHome(t)
	writeFile(t, filepath.Join(dir, "agents", "alpha", "agent.yaml"), "name: Alpha\ndelegates: [gamma]\n")
	writeFile(t, filepath.Join(dir, "agents", "beta", "agent.yaml"), "name: Beta\nmax_steps: lots\n")
	writeFile(t, filepath.Join(dir, "agents", "gamma", "agent.yaml"), "name: Gamma\n")
	writeFile(t, filepath.Join(dir, "agents", "Bad Id", "agent.yaml"), "name: Bad\n")
	writeFile(t, filepath.Join(dir, "agents", "README.md"), "not an agent\n")

	h := mustLoad(t, dir)
	var ids []string
	for id := range h.Agents {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if want := []string{"alpha", "gamma", "master"}; !slices.Equal(ids, want) {
		t.Errorf("agents = %v, want %v", ids, want)
	}
	want := []string{
		filepath.Join(dir, "agents", "Bad Id") + `: invalid agent id "Bad Id": want lowercase letters, digits, _ and -, starting with a letter or digit, at most 63`,
		filepath.Join(dir, "agents", "beta", "agent.yaml") + `:2:12: max_steps: must be an integer, got "lots"`,
	}
	var got []string
	for _, p := range h.Problems {
		got = append(got, p.Error())
	}
	if !slices.Equal(got, want) {
		t.Errorf("Problems =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if a := h.Agents["alpha"]; a.ID != "alpha" || a.Dir != filepath.Join(dir, "agents", "alpha") {
		t.Errorf("alpha = ID %q Dir %q", a.ID, a.Dir)
	}
}

func TestDefaults(t *testing.T) {
	dir := newHome(t)
	writeFile(t, filepath.Join(dir, "config.yaml"), "nats: {listen: 127.0.0.1:4222}\n")
	writeFile(t, filepath.Join(dir, "agent.yaml"), "name: Bare\n")
	writeFile(t, filepath.Join(dir, "agents", "frugal", "agent.yaml"), "name: Frugal\ncost_cap_usd: 0\napproval_ttl_seconds: 120\n")
	h := mustLoad(t, dir)
	if len(h.Problems) != 0 {
		t.Fatalf("Problems = %v", h.Problems)
	}

	c := h.Config
	gotCfg := []any{c.Timezone, c.ApprovalTTLSeconds, c.NATS.Sync, c.NATS.Listen, c.Listen, c.Location()}
	wantCfg := []any{"UTC", 600, "always", "127.0.0.1:4222", "127.0.0.1:7420", time.UTC}
	if !slices.Equal(gotCfg, wantCfg) {
		t.Errorf("config = %v, want %v", gotCfg, wantCfg)
	}

	m := h.Agents[MasterID]
	gotA := []any{m.MaxSteps, m.CostCapUSD, m.ToolOutputChars, m.ApprovalTTLSeconds, m.EffectiveApprovalTTL(c), m.Policy.ShellNetwork == nil}
	wantA := []any{12, 0.50, 8000, 0, 600 * time.Second, true}
	if !slices.Equal(gotA, wantA) {
		t.Errorf("master = %v, want %v", gotA, wantA)
	}

	// An explicit zero is kept: defaults fill only keys the file leaves out.
	f := h.Agents["frugal"]
	if f.CostCapUSD != 0 || f.EffectiveApprovalTTL(c) != 120*time.Second {
		t.Errorf("frugal = cost %v ttl %v, want 0 and 2m", f.CostCapUSD, f.EffectiveApprovalTTL(c))
	}
}

func TestFullAgentLoads(t *testing.T) {
	dir := newHome(t)
	writeFile(t, filepath.Join(dir, "config.yaml"), `timezone: Asia/Ho_Chi_Minh
`)
	writeFile(t, filepath.Join(dir, "agents", "ledger", "agent.yaml"), `name: Ledger
description: money
routes: [openrouter:anthropic/claude-sonnet-4.5, ollama:qwen3:8b]
escalation_route: openrouter:openai/o3
tools: [shell_run, read_file]
delegates: [master]
autonomous: true
max_steps: 30
cost_cap_usd: 1.25
tool_output_chars: 4000
approval_ttl_seconds: 0
schedules:
  - name: nightly
    cron: "0 3 * * *"
    command: /maintain
  - name: gold
    cron: "@hourly"
    script: print(1)
    then_prompt: Summarise.
    approval_ttl_seconds: 3600
telegram:
  allowed_chat_ids: [-1001234567890, 42]
  approval_ttl_seconds: 900
shell_ask_patterns: ["^git push"]
shell_allow_patterns: ["^ls"]
shell_deny_patterns: ["rm -rf /"]
shell_network: false
shell_write_paths: [/tmp/ledger]
`)
	h := mustLoad(t, dir)
	if len(h.Problems) != 0 {
		t.Fatalf("Problems = %v", h.Problems)
	}
	a := h.Agents["ledger"]
	if a.Policy.ShellNetwork == nil || *a.Policy.ShellNetwork || a.Telegram.AllowedChatIDs[0] != -1001234567890 ||
		a.Schedules[1].ThenPrompt != "Summarise." || a.CostCapUSD != 1.25 || h.Config.Location().String() != "Asia/Ho_Chi_Minh" {
		t.Errorf("ledger = %+v", a)
	}
}

func TestGetenvProcessWins(t *testing.T) {
	dir := newHome(t)
	writeFile(t, filepath.Join(dir, "env"), "OPENROUTER_API_KEY=from-file\nOLLAMA_HOST=http://file:11434\n")
	h := mustLoad(t, dir)
	proc := map[string]string{"OPENROUTER_API_KEY": "from-process"}
	getenv := func(k string) string { return proc[k] }
	tests := []struct{ key, want string }{
		{"OPENROUTER_API_KEY", "from-process"},
		{"OLLAMA_HOST", "http://file:11434"},
		{"TELEGRAM_BOT_TOKEN", ""},
	}
	for _, tt := range tests {
		if got := h.Getenv(tt.key, getenv); got != tt.want {
			t.Errorf("Getenv(%s) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

// The models: block reaches the catalog the providers and the loop read.
func TestModelsConfigReachesCatalog(t *testing.T) {
	dir := newHome(t)
	writeFile(t, filepath.Join(dir, "config.yaml"), "models:\n  ollama:qwen3:8b:\n    context_window: 8192\n    max_output_tokens: 1024\n    vision: false\n    input_usd_per_mtok: 0\n    output_usd_per_mtok: 0\n")
	h := mustLoad(t, dir)
	s := h.Config.Catalog().Lookup("ollama:qwen3:8b")
	if s.ContextWindow != 8192 || s.MaxOutputTokens != 1024 || s.Vision || s.Price == nil || s.Price.Cost(1000, 1000) != 0 {
		t.Errorf("spec %+v", s)
	}
	if s := h.Config.Catalog().Lookup("openrouter:anthropic/claude-sonnet-4"); s.ContextWindow != 200000 || !s.Vision {
		t.Errorf("built-in row lost: %+v", s)
	}
}
