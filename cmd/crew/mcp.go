package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/app"
	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/gateways/mcpserver"
	"github.com/my-agent-crew/crew/tools/mcp"
)

// runMCP is crew mcp: import an MCP client's server config, or serve the
// crew's MCP tools over stdio.
func runMCP(ctx context.Context, env *cliEnv, args []string) error {
	if len(args) > 0 && args[0] == "serve" {
		return runMCPServe(ctx, env, args[1:])
	}
	if len(args) > 0 && (args[0] == "login" || args[0] == "logout") {
		return runMCPLogin(ctx, env, args[0], args[1:])
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
	res.Write(env.stdout, dir)
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

// runMCPLogin is crew mcp login / logout <server>: OAuth for a remote
// server of config.yaml mcp_servers. Login prints the URL to open (no
// browser is started) and waits for the browser to come back to its
// callback on 127.0.0.1; the grant goes to the home's secret area (0600),
// where the running crew serve reads it from its next request. Logout
// revokes it where the authorization server offers revocation and deletes
// it. No token is ever printed.
func runMCPLogin(ctx context.Context, env *cliEnv, verb string, args []string) error {
	fs, homeFlag := newFlags(env, "mcp")
	timeout := fs.Duration("timeout", 10*time.Minute, "login: how long to wait for the browser to come back")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(env.stderr, "crew mcp %s: want exactly one server name of config.yaml mcp_servers\n", verb)
		return exitError{2}
	}
	_, h, err := openHome(env, *homeFlag)
	if err != nil {
		return err
	}
	name := fs.Arg(0)
	servers, problems := app.MCPServers(h, env.redactor(), env.getenv)
	srv, err := mcp.Named(servers, problems, h.MCPNames(), name)
	if err != nil {
		return fmt.Errorf("crew mcp %s: %w", verb, err)
	}
	if verb == "logout" {
		revoked, err := mcp.Logout(ctx, srv, nil)
		if err != nil {
			return fmt.Errorf("crew mcp logout: %w", err)
		}
		fmt.Fprintln(env.stdout, mcp.LoggedOut(name, revoked))
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	g, err := mcp.Login(ctx, srv, nil, func(u string) {
		fmt.Fprintf(env.stdout, "To log in to MCP server %s, open this URL in a browser (waiting up to %s):\n%s\n", name, *timeout, u)
	})
	if err != nil {
		return fmt.Errorf("crew mcp login: %w", err)
	}
	fmt.Fprintln(env.stdout, g.LoggedIn(srv))
	return nil
}
