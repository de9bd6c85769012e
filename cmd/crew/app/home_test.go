package app

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
)

// What the App builds from the loaded home (home.go): the agents' tools
// and policies, the MCP servers with their secrets resolved, the search
// provider and the route override.

// newTestHome is an initialised home with no example agents.
func newTestHome(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := home.Init(dir); err != nil {
		t.Fatalf("Init: %v", err)
	}
	for _, name := range home.Examples {
		if err := os.RemoveAll(filepath.Join(dir, "agents", name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func loadTestHome(t *testing.T, dir string) *home.Home {
	t.Helper()
	h, err := home.Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return h
}

// TestComputerOnGivesTheFourTools (R-DSK): computer: "on" gives an agent
// the four computer_* tools beside its own and its computer_apps; nothing
// else does — tools: cannot name them, and computer_apps alone is refused
// where it is written.
func TestComputerOnGivesTheFourTools(t *testing.T) {
	dir := newTestHome(t)
	writeTestFile(t, filepath.Join(dir, "agents", "desk", "agent.yaml"), "name: Desk\ntools: [workspace_read]\ncomputer: \"on\"\ncomputer_apps: [gedit, Gtk3-widget-factory]\n")
	writeTestFile(t, filepath.Join(dir, "agents", "plain", "agent.yaml"), "name: Plain\ncomputer: \"off\"\n")
	writeTestFile(t, filepath.Join(dir, "agents", "sneaky", "agent.yaml"), "name: Sneaky\ntools: [workspace_read, computer_act]\n")
	writeTestFile(t, filepath.Join(dir, "agents", "halfway", "agent.yaml"), "name: Halfway\ncomputer_apps: [gedit]\n")
	h := loadTestHome(t, dir)
	agents := loopAgents(h, nil, []string{"workspace_read", "shell_run"})
	want := []string{"workspace_read", "computer_act", "computer_observe", "computer_screenshot", "computer_state"}
	if got := agents["desk"].Tools; !slices.Equal(got, want) {
		t.Errorf("desk tools %v, want %v", got, want)
	}
	if got := agents["desk"].Policy.ComputerApps; !slices.Equal(got, []string{"gedit", "Gtk3-widget-factory"}) {
		t.Errorf("desk computer_apps %v", got)
	}
	for _, id := range []string{"plain", "master"} {
		if slices.ContainsFunc(agents[id].Tools, func(n string) bool { return strings.HasPrefix(n, "computer_") }) {
			t.Errorf("%s has computer tools: %v", id, agents[id].Tools)
		}
	}
	var got []string
	for _, p := range h.Problems {
		got = append(got, p.Error())
	}
	slices.Sort(got)
	wantProblems := []string{
		filepath.Join(dir, "agents", "halfway", "agent.yaml") + `:2:1: computer_apps: set computer: "on" too, or the apps are listed for nothing`,
		filepath.Join(dir, "agents", "sneaky", "agent.yaml") + `:2:25: tools[1]: computer_act comes with computer: "on", not with tools`,
	}
	if !slices.Equal(got, wantProblems) {
		t.Errorf("problems:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantProblems, "\n"))
	}
}

// The browser tools come with agent.yaml's browser key on a machine with
// browser_enabled and a Chromium on the PATH, never through tools:;
// doctor says which.
func TestBrowserToolsComeWithTheBrowserKey(t *testing.T) {
	bin := t.TempDir()
	chromium := filepath.Join(bin, "chromium")
	writeTestFile(t, chromium, "#!/bin/sh\n")
	if err := os.Chmod(chromium, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	dir := newTestHome(t)
	writeTestFile(t, filepath.Join(dir, "agents", "reader", "agent.yaml"), "name: r\nbrowser: read\nbrowser_hosts: [example.com, 'intra.lan:8443']\ntools: [workspace_list]\n")
	writeTestFile(t, filepath.Join(dir, "agents", "doer", "agent.yaml"), "name: d\nbrowser: act\nbrowser_ask_patterns: ['(?i)archive']\n")
	writeTestFile(t, filepath.Join(dir, "agents", "sneaky", "agent.yaml"), "name: s\ntools: [workspace_list, browser_act]\n")
	names := func(h *home.Home, id string) string {
		return strings.Join(loopAgents(h, nil, []string{"workspace_read"})[id].Tools, " ")
	}
	h := loadTestHome(t, dir)
	if got := names(h, "reader"); strings.Contains(got, "browser") {
		t.Errorf("browser_enabled unset, reader got %s", got)
	}
	if r := doctorSays(t, h); !strings.Contains(r, "browser: off") || !strings.Contains(r, "doer (act), reader (read)") {
		t.Errorf("report: %s", r)
	}
	writeTestFile(t, filepath.Join(dir, "config.yaml"), "browser_enabled: true\n")
	h = loadTestHome(t, dir)
	if got := names(h, "reader"); got != "workspace_list browser_navigate browser_snapshot browser_text browser_tabs browser_screenshot browser_pdf" {
		t.Errorf("reader: %s", got)
	}
	if got := names(h, "doer"); !strings.HasSuffix(got, "browser_pdf browser_act browser_download") || !strings.HasPrefix(got, "workspace_read ") {
		t.Errorf("doer: %s", got)
	}
	if got := names(h, "sneaky"); got != "workspace_list" {
		t.Errorf("sneaky (browser tool under tools:, no key): %s", got)
	}
	p := loopAgents(h, nil, nil)["reader"].Policy
	if p.Browser != "read" || strings.Join(p.BrowserHosts, ",") != "example.com,intra.lan:8443" {
		t.Errorf("policy %+v", p)
	}
	if r := doctorSays(t, h); !strings.Contains(r, "browser: enabled, Chromium "+chromium) {
		t.Errorf("report: %s", r)
	}
	if err := os.Remove(chromium); err != nil {
		t.Fatal(err)
	}
	if got := names(h, "reader"); got != "workspace_list" {
		t.Errorf("no Chromium, reader got %s", got)
	}
	if r := doctorSays(t, h); !strings.Contains(r, "no Chromium found") {
		t.Errorf("report: %s", r)
	}
	writeTestFile(t, filepath.Join(dir, "agents", "reader", "agent.yaml"), "name: r\nbrowser: write\n")
	writeTestFile(t, filepath.Join(dir, "agents", "doer", "agent.yaml"), "name: d\nbrowser_hosts: ['http://example.com/']\n")
	h = loadTestHome(t, dir)
	if len(h.Problems) != 2 {
		t.Errorf("problems %v", h.Problems)
	}
	for _, p := range h.Problems {
		if !strings.Contains(p.Error(), "browser") {
			t.Errorf("problem %v", p)
		}
	}
}

// The search provider and its key come from config.yaml and the env
// file; doctor names the key's variable, never its value.
func TestWebSearchProviderKeyFromTheEnvFile(t *testing.T) {
	dir := newTestHome(t)
	writeTestFile(t, filepath.Join(dir, "config.yaml"), "web_search: {provider: brave}\n")
	writeTestFile(t, filepath.Join(dir, "env"), "BRAVE_API_KEY=bk-123\n")
	h := loadTestHome(t, dir)
	if c := h.Config.WebSearch.Keyed(h.Lookup(func(string) string { return "" })); c.Provider != "brave" || c.Key != "bk-123" {
		t.Errorf("search config %+v", c)
	}
	if r := doctorSays(t, h); !strings.Contains(r, "web_search: brave (BRAVE_API_KEY set)") || strings.Contains(r, "bk-123") {
		t.Errorf("report:\n%s", r)
	}
}

// MY_AGENT_ROUTES set in the env file overrides every agent's routes as
// from the process environment, and the process environment wins.
func TestEnvFileRoutesOverrideEveryAgent(t *testing.T) {
	dir := newTestHome(t)
	writeTestFile(t, filepath.Join(dir, "env"), "MY_AGENT_ROUTES=fake:echo,ollama:qwen3\n")
	h := loadTestHome(t, dir)
	_, override, note, err := models(t.Context(), h, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(override, []string{"fake:echo", "ollama:qwen3"}) {
		t.Errorf("override from the env file = %q (%s)", override, note)
	}
	proc := func(k string) string {
		if k == "MY_AGENT_ROUTES" {
			return "fake:echo"
		}
		return ""
	}
	if _, override, _, err := models(t.Context(), h, proc); err != nil || !slices.Equal(override, []string{"fake:echo"}) {
		t.Errorf("override with the process environment set = %q, %v", override, err)
	}
}

// An imported Claude Desktop config's servers resolve: the header and env
// values moved to the env file come back for the pool.
func TestMCPImportedServersResolve(t *testing.T) {
	dir := newTestHome(t)
	src := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	writeTestFile(t, src, `{"mcpServers": {
  "github": {"command": "node", "args": ["/opt/gh/index.js"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_importedSecret123"}},
  "remote": {"type": "http", "url": "https://mcp.example.test/mcp", "headers": {"Authorization": "Bearer tok_remoteSecret456"}}}}`)
	if _, err := home.ImportMCP(dir, src, home.MasterID, false); err != nil {
		t.Fatal(err)
	}
	h := loadTestHome(t, dir)
	servers, problems := MCPServers(h, events.NewRedactor(), func(string) string { return "" })
	if len(problems) > 0 || len(servers) != 2 {
		t.Fatalf("servers %d, problems %v", len(servers), problems)
	}
	for _, s := range servers {
		if s.Name == "remote" && s.Headers["Authorization"] != "Bearer tok_remoteSecret456" {
			t.Errorf("remote's header resolves to %q", s.Headers["Authorization"])
		}
		if s.Name == "github" && !slices.Contains(s.Stdio.Env, "GITHUB_PERSONAL_ACCESS_TOKEN=ghp_importedSecret123") {
			t.Errorf("github's env resolves to %v", s.Stdio.Env)
		}
	}
}

// Recall embeds at the route config.yaml names, at its provider's
// address with its key from the env file or the process environment; no
// route is BM25 alone.
func TestEmbedderFollowsTheRouteAndItsProvider(t *testing.T) {
	dir := newTestHome(t)
	writeTestFile(t, filepath.Join(dir, "env"), "OPENROUTER_API_KEY=or-key-123\nOLLAMA_HOST=0.0.0.0:9999\n")
	proc := func(k string) string {
		if k == "OPENROUTER_BASE_URL" {
			return " https://router.example.test/v1 "
		}
		return ""
	}
	for _, c := range []struct{ route, want string }{
		{"", "<nil>"},
		{"ollama:nomic-embed-text", "ollama:nomic-embed-text nomic-embed-text http://127.0.0.1:9999  false"},
		{"openrouter:openai/text-embedding-3-small", "openrouter:openai/text-embedding-3-small openai/text-embedding-3-small https://router.example.test/v1 or-key-123 true"},
	} {
		cfg := "timezone: UTC\n"
		if c.route != "" {
			cfg = "embeddings: {route: '" + c.route + "'}\n"
		}
		writeTestFile(t, filepath.Join(dir, "config.yaml"), cfg)
		got := "<nil>"
		if e := embedder(loadTestHome(t, dir), proc); e != nil {
			got = strings.Join([]string{e.Name, e.Model, e.BaseURL, e.APIKey, strconv.FormatBool(e.OpenAI)}, " ")
		}
		if got != c.want {
			t.Errorf("route %q: embedder %q, want %q", c.route, got, c.want)
		}
	}
}
