package home

import (
	"bytes"
	"testing"
)

// crew mcp import prints what MCPImport.Write says: each server imported
// or skipped, the secrets moved, and the one closing line of its case.
func TestMCPImportWrite(t *testing.T) {
	servers := []ImportedMCP{
		{From: "github", Name: "github", Summary: "stdio node /opt/gh/index.js", Notes: []string{"env GITHUB_TOKEN → ${MCP_GITHUB_GITHUB_TOKEN}"}},
		{From: "events", Skipped: "SSE transport: the crew speaks stdio and streamable HTTP"},
	}
	skipped := servers[1:]
	const body = "imported github: stdio node /opt/gh/index.js\n" +
		"  env GITHUB_TOKEN → ${MCP_GITHUB_GITHUB_TOKEN}\n" +
		"not imported events: SSE transport: the crew speaks stdio and streamable HTTP\n" +
		"secrets kept in /h/env, named in config.yaml as ${VAR}: MCP_GITHUB_GITHUB_TOKEN\n"
	for _, tc := range []struct {
		name string
		r    MCPImport
		want string
	}{
		{"no agent", MCPImport{Servers: servers, EnvVars: []string{"MCP_GITHUB_GITHUB_TOKEN"}},
			body + "no agent uses them yet: list them under mcp: in an agent.yaml (or rerun with --agent master); restart crew serve to load them\n"},
		{"agent", MCPImport{Servers: servers, EnvVars: []string{"MCP_GITHUB_GITHUB_TOKEN"}, Agent: "master"},
			body + "agent master may use them (mcp: in its agent.yaml); their tools ask before they run unless listed in read_only_tools; restart crew serve to load them\n"},
		{"dry run", MCPImport{Servers: servers[:1], DryRun: true, Agent: "master"},
			"would import github: stdio node /opt/gh/index.js\n  env GITHUB_TOKEN → ${MCP_GITHUB_GITHUB_TOKEN}\ndry run: nothing written\n"},
		{"nothing", MCPImport{Servers: skipped},
			"not imported events: SSE transport: the crew speaks stdio and streamable HTTP\nnothing imported\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			tc.r.Write(&b, "/h")
			if got := b.String(); got != tc.want {
				t.Errorf("printed\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
