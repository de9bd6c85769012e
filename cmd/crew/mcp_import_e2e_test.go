package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// R-MCP: a Claude Desktop config brought along with crew mcp import works
// through crew serve as it did there: server-everything over stdio, named
// in the master's mcp: list by --agent, its token moved to the env file
// (config.yaml names it) and handed to the server; its echo found by
// tool_search asks first, as every imported tool does.
func TestMCPImportedClaudeDesktopConfigWorksThroughServe(t *testing.T) {
	everything := npmServerJS(t, "server-everything")
	home := initHome(t)
	token := "tok_" + filepath.Base(home) + "_imported"
	src := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	must(t, os.WriteFile(src, []byte(`{"mcpServers": {
  "everything": {"command": "node", "args": [`+strconv.Quote(everything)+`, "stdio"], "env": {"EVERYTHING_TOKEN": "`+token+`"}},
  "legacy": {"url": "http://127.0.0.1:9/sse"}
}}`), 0o600))

	out, errOut, code := crew(t, home, "mcp", "import", src, "--agent", "master")
	if code != 0 || !strings.Contains(out, "imported everything: stdio node ") || !strings.Contains(out, "not imported legacy: SSE transport") ||
		!strings.Contains(out, "MCP_EVERYTHING_EVERYTHING_TOKEN") || !strings.Contains(out, "agent master may use them") {
		t.Fatalf("crew mcp import = %d\n%s\n%s", code, out, errOut)
	}
	cfg, _ := os.ReadFile(filepath.Join(home, "config.yaml"))
	if strings.Contains(string(cfg), token) || strings.Contains(out, token) {
		t.Errorf("the token is in config.yaml or the output")
	}
	if out, _, code := crew(t, home, "doctor"); code != 0 || !strings.Contains(out, "  everything (stdio node ") {
		t.Errorf("doctor after import:\n%s", out)
	}

	model := &toolModel{}
	api := httptest.NewServer(model)
	defer api.Close()
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+api.URL+"/v1")
	defer s.stop(t)
	model.queue(`call:tool_search {"query":"echo"}`, `call:mcp__everything__echo {"message":"hello import"}`, "text:echoed")
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "find the echo tool"})
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "awaiting approval", func(c convView) bool { return c.Status == "awaiting_approval" })
	if len(c.PendingApprovals) != 1 || c.PendingApprovals[0].Tool != "mcp__everything__echo" {
		t.Fatalf("pending %+v, want the imported echo to ask", c.PendingApprovals)
	}
	if len(processesWith("EVERYTHING_TOKEN="+token)) == 0 {
		t.Errorf("the imported server does not run with its token")
	}
	if code, body := postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"}); code != 200 {
		t.Fatalf("approve = %d %v", code, body)
	}
	waitConv(t, s.url, id, "settled after echo", settled)
	reqs := model.requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(last.last, "Echo: hello import") {
		t.Errorf("the model got %q, want the echo", last.last)
	}
}
