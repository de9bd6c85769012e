package home

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// claudeDesktop is a claude_desktop_config.json as users have them: a
// filesystem server on a folder, a server with a token in env, a remote
// server with a bearer header, and the kinds the crew cannot take.
func claudeDesktop(folder string) string {
	return `{
  "mcpServers": {
    "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "` + folder + `"]},
    "github": {"command": "node", "args": ["/opt/gh/index.js"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_importedSecret123"}},
    "remote": {"type": "http", "url": "https://mcp.example.test/mcp", "headers": {"Authorization": "Bearer tok_remoteSecret456"}},
    "My Notes.v2": {"command": "uvx", "args": ["notes-mcp"], "alwaysAllow": ["search"]},
    "events": {"type": "sse", "url": "https://mcp.example.test/sse"},
    "container": {"command": "docker", "args": ["run", "-i", "--rm", "ghcr.io/x/y"]},
    "off": {"command": "node", "args": ["off.js"], "disabled": true}
  }
}`
}

func writeSample(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	writeFile(t, p, text)
	return p
}

func TestMCPImportClaudeDesktopConfig(t *testing.T) {
	dir := newHome(t)
	folder := t.TempDir()
	src := writeSample(t, claudeDesktop(folder))
	before, _ := os.ReadFile(filepath.Join(dir, "config.yaml"))

	res, err := ImportMCP(dir, src, MasterID, false)
	if err != nil {
		t.Fatalf("ImportMCP: %v", err)
	}
	got := map[string]ImportedMCP{}
	var order []string
	for _, s := range res.Servers {
		got[s.From] = s
		order = append(order, s.From)
	}
	if want := []string{"filesystem", "github", "remote", "My Notes.v2", "events", "container", "off"}; !slices.Equal(order, want) {
		t.Errorf("servers in order %v, want the file's %v", order, want)
	}
	for from, why := range map[string]string{"events": "SSE", "container": "docker", "off": "disabled"} {
		if !strings.Contains(got[from].Skipped, why) {
			t.Errorf("%s: skipped %q, want it to say %s", from, got[from].Skipped, why)
		}
	}
	if n := got["My Notes.v2"]; n.Name != "My-Notes-v2" || !strings.Contains(strings.Join(n.Notes, "\n"), "alwaysAllow: not mapped") {
		t.Errorf("My Notes.v2 imported as %q with notes %q", n.Name, n.Notes)
	}

	after, _ := os.ReadFile(filepath.Join(dir, "config.yaml"))
	if !strings.HasPrefix(string(after), string(before)) {
		t.Errorf("config.yaml's own lines and comments changed")
	}
	for _, secret := range []string{"ghp_importedSecret123", "tok_remoteSecret456"} {
		if strings.Contains(string(after), secret) {
			t.Errorf("config.yaml holds the secret %s:\n%s", secret, after)
		}
	}
	h := mustLoad(t, dir)
	fs := h.Config.MCPServers["filesystem"]
	if !slices.Equal(fs.Command, []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", folder}) || !fs.Network || !slices.Equal(fs.Paths, []string{folder}) {
		t.Errorf("filesystem = %+v", fs)
	}
	if gh := h.Config.MCPServers["github"]; gh.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "${MCP_GITHUB_GITHUB_PERSONAL_ACCESS_TOKEN}" || gh.Network {
		t.Errorf("github = %+v", gh)
	}
	if r := h.Config.MCPServers["remote"]; r.URL != "https://mcp.example.test/mcp" || r.Headers["Authorization"] != "${MCP_REMOTE_AUTHORIZATION}" {
		t.Errorf("remote = %+v", r)
	}
	if h.Env["MCP_GITHUB_GITHUB_PERSONAL_ACCESS_TOKEN"] != "ghp_importedSecret123" || h.Env["MCP_REMOTE_AUTHORIZATION"] != "Bearer tok_remoteSecret456" {
		t.Errorf("env file holds %v", h.Env)
	}
	if info, _ := os.Stat(filepath.Join(dir, "env")); info.Mode().Perm() != 0o600 {
		t.Errorf("env file mode %v", info.Mode().Perm())
	}
	if m := h.Agents[MasterID].MCP; !slices.Equal(m, []string{"filesystem", "github", "remote", "My-Notes-v2"}) {
		t.Errorf("master's mcp: %v", m)
	}

	// Again: nothing changes, every server says why.
	cfg, _ := os.ReadFile(filepath.Join(dir, "config.yaml"))
	env, _ := os.ReadFile(filepath.Join(dir, "env"))
	res, err = ImportMCP(dir, src, MasterID, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Servers {
		if s.Skipped == "" {
			t.Errorf("second import took %s again", s.From)
		}
	}
	cfg2, _ := os.ReadFile(filepath.Join(dir, "config.yaml"))
	env2, _ := os.ReadFile(filepath.Join(dir, "env"))
	if string(cfg) != string(cfg2) || string(env) != string(env2) {
		t.Errorf("a second import changed the files")
	}
}

// Into an mcp_servers block that exists: after its last entry, before the
// next key and its comment; other lines untouched.
func TestMCPImportIntoExistingBlockKeepsComments(t *testing.T) {
	dir := newHome(t)
	cfgPath := filepath.Join(dir, "config.yaml")
	old, _ := os.ReadFile(cfgPath)
	block := "\nmcp_servers:\n    # my notes server\n    notes:\n        url: \"http://127.0.0.1:3001/mcp\" # local\n\n# the web UI\nbrowser_enabled: false\n"
	writeFile(t, cfgPath, string(old)+block)
	src := writeSample(t, `{"mcpServers": {"notes": {"url": "http://127.0.0.1:9/mcp"}, "memory": {"command": "node", "args": ["m.js"]}}}`)
	res, err := ImportMCP(dir, src, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Servers[0].Skipped == "" || res.Servers[1].Name != "memory" {
		t.Fatalf("servers %+v", res.Servers)
	}
	got, _ := os.ReadFile(cfgPath)
	want := string(old) + "\nmcp_servers:\n    # my notes server\n    notes:\n        url: \"http://127.0.0.1:3001/mcp\" # local\n" +
		"    memory:\n        command: [\"node\", \"m.js\"]\n\n# the web UI\nbrowser_enabled: false\n"
	if string(got) != want {
		t.Errorf("config.yaml after import:\n%s\nwant:\n%s", got[len(old):], want[len(old):])
	}
	h := mustLoad(t, dir)
	if h.Config.MCPServers["notes"].URL != "http://127.0.0.1:3001/mcp" || len(h.Config.MCPServers["memory"].Command) != 2 {
		t.Errorf("servers %+v", h.Config.MCPServers)
	}
}

// A bad file, a dry run, an inline mcp_servers and an unknown agent
// change nothing; the errors say where.
func TestMCPImportChangesNothingOnBadInput(t *testing.T) {
	dir := newHome(t)
	snapshot := func() string {
		c, _ := os.ReadFile(filepath.Join(dir, "config.yaml"))
		e, _ := os.ReadFile(filepath.Join(dir, "env"))
		a, _ := os.ReadFile(filepath.Join(dir, "agent.yaml"))
		return string(c) + string(e) + string(a)
	}
	before := snapshot()
	bad := writeSample(t, "{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"node\",, }\n  }\n}")
	if _, err := ImportMCP(dir, bad, "", false); err == nil || !strings.Contains(err.Error(), bad+":3:") {
		t.Errorf("bad JSON: %v, want %s:3:col", err, bad)
	}
	if _, err := ImportMCP(dir, writeSample(t, `{"servers": 3}`), "", false); err == nil || !strings.Contains(err.Error(), "mcpServers") {
		t.Errorf("servers not an object: %v", err)
	}
	if _, err := ImportMCP(dir, writeSample(t, `{"other": {}}`), "", false); err == nil || !strings.Contains(err.Error(), "not an MCP client config") {
		t.Errorf("no mcpServers: %v", err)
	}
	good := writeSample(t, `{"mcpServers": {"memory": {"command": "node", "args": ["m.js"], "env": {"K": "secret-value"}}}}`)
	if _, err := ImportMCP(dir, good, "nobody", false); err == nil || !strings.Contains(err.Error(), `no agent "nobody"`) {
		t.Errorf("unknown agent: %v", err)
	}
	res, err := ImportMCP(dir, good, MasterID, true)
	if err != nil || len(res.Servers) != 1 || res.Servers[0].Name != "memory" {
		t.Errorf("dry run: %+v %v", res, err)
	}
	if snapshot() != before {
		t.Fatalf("bad input or a dry run changed the home")
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	c, _ := os.ReadFile(filepath.Join(dir, "config.yaml"))
	writeFile(t, cfgPath, string(c)+"\nmcp_servers: {notes: {url: \"http://127.0.0.1:3001/mcp\"}}\n")
	inline, _ := os.ReadFile(cfgPath)
	if _, err := ImportMCP(dir, good, "", false); err == nil || !strings.Contains(err.Error(), "inline") {
		t.Errorf("inline mcp_servers: %v", err)
	}
	if now, _ := os.ReadFile(cfgPath); string(now) != string(inline) {
		t.Errorf("refused import changed config.yaml")
	}
}
