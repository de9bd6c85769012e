package mcp

import (
	"context"
	"strings"
	"testing"
)

// crew doctor's MCP lines: the running crew's states when it answers, the
// config's problems last, nothing connected to.
func TestReportSaysWhatTheRunningCrewHas(t *testing.T) {
	if got := Report(t.Context(), "test", nil, nil, nil, nil, nil); len(got) != 1 || !strings.Contains(got[0], "none declared") {
		t.Fatalf("no servers: %q", got)
	}
	servers := []Server{{Name: "docs", URL: "http://127.0.0.1:1/mcp"}}
	running := func(context.Context) ([]State, bool) {
		return []State{
			{Name: "docs", Transport: "streamable HTTP", Where: "http://127.0.0.1:1/mcp", State: "running", Tools: 3},
			{Name: "fs", Transport: "stdio", Where: "node fs.js", State: "down", Error: "exit 1", Restarts: 1, LastEnded: "exit status 1"},
			{Name: "cal", Transport: "streamable HTTP", Where: "https://cal.example/mcp", State: "needs login", Error: "needs login: run crew mcp login cal"},
		}, true
	}
	got := strings.Join(Report(t.Context(), "test", servers, []string{"config.yaml: mcp_servers.x: X not set"}, nil, nil, running), "\n")
	want := `MCP servers (as the running crew serve has them):
  docs (streamable HTTP http://127.0.0.1:1/mcp): running, 3 tools
  fs (stdio node fs.js): down: exit 1, 0 tools, restarted once (last process: exit status 1)
  cal (streamable HTTP https://cal.example/mcp): needs login: run crew mcp login cal, 0 tools
  config.yaml: mcp_servers.x: X not set`
	if got != want {
		t.Fatalf("report:\n%s\nwant:\n%s", got, want)
	}
}
