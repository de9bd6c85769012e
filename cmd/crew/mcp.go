package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/gateways/mcpserver"
)

// runMCP is crew mcp: import an MCP client's server config, or serve the
// crew's MCP tools over stdio.
func runMCP(ctx context.Context, env *cliEnv, args []string) error {
	if len(args) > 0 && args[0] == "serve" {
		return runMCPServe(ctx, env, args[1:])
	}
	if len(args) == 0 || args[0] != "import" {
		fs, _ := newFlags(env, "mcp")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fs.SetOutput(env.stdout)
			fs.Usage()
			return nil
		}
		fs.Usage()
		return exitError{2}
	}
	fs, homeFlag := newFlags(env, "mcp")
	agent := fs.String("agent", "", "also add the imported servers to this agent's mcp: list (e.g. master)")
	dry := fs.Bool("dry-run", false, "say what would be imported; write nothing")
	if err := parse(env, fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(env.stderr, "crew mcp import: want exactly one FILE (a claude_desktop_config.json, .mcp.json, ~/.cursor/mcp.json or .vscode/mcp.json)")
		return exitError{2}
	}
	dir, err := homeDir(env, *homeFlag)
	if err != nil {
		return err
	}
	res, err := home.ImportMCP(dir, fs.Arg(0), *agent, *dry)
	if err != nil {
		return err
	}
	verb, imported := "imported", 0
	if res.DryRun {
		verb = "would import"
	}
	for _, s := range res.Servers {
		if s.Skipped != "" {
			fmt.Fprintf(env.stdout, "not imported %s: %s\n", s.From, s.Skipped)
			continue
		}
		imported++
		fmt.Fprintf(env.stdout, "%s %s: %s\n", verb, s.Name, s.Summary)
		for _, n := range s.Notes {
			fmt.Fprintf(env.stdout, "  %s\n", n)
		}
	}
	if len(res.EnvVars) > 0 {
		fmt.Fprintf(env.stdout, "secrets kept in %s/env, named in config.yaml as ${VAR}: %s\n", dir, strings.Join(res.EnvVars, ", "))
	}
	switch {
	case res.DryRun:
		fmt.Fprintln(env.stdout, "dry run: nothing written")
	case res.Agent != "":
		fmt.Fprintf(env.stdout, "agent %s may use them (mcp: in its agent.yaml); their tools ask before they run unless listed in read_only_tools; restart crew serve to load them\n", res.Agent)
	case imported == 0:
		fmt.Fprintln(env.stdout, "nothing imported")
	default:
		fmt.Fprintln(env.stdout, "no agent uses them yet: list them under mcp: in an agent.yaml (or rerun with --agent master); restart crew serve to load them")
	}
	return nil
}

// runMCPServe is crew mcp serve: the crew's MCP tools on stdin/stdout for
// a desktop or editor client, relayed to the running server's /mcp.
func runMCPServe(ctx context.Context, env *cliEnv, args []string) error {
	fs, homeFlag := newFlags(env, "mcp")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	dir, h, err := openHome(env, *homeFlag)
	if err != nil {
		return err
	}
	info, err := home.ReadServeInfo(dir)
	if err != nil {
		return fmt.Errorf("crew mcp serve: no crew serve runs for the home %s (%v): start it with crew serve; crew mcp serve relays to it", dir, err)
	}
	token, err := h.MCPToken(env.getenv, false)
	if err != nil || token == "" {
		return fmt.Errorf("crew mcp serve: the home %s has no token for /mcp yet (%v): start crew serve once, which makes it", dir, err)
	}
	return mcpserver.Relay(ctx, info.URL+"/mcp", token, home.CrewVersion(), os.Stdin, os.Stdout)
}
