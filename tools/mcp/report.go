package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools/shell"
)

// Report is what crew doctor says of the declared servers: as the running
// crew has them (running, its states; ok false when no crew runs), else
// whether each answers now, how many tools it offers and which the owner
// made read-only. problems are the servers left out of the config, each
// listed last; box is the stdio servers' sandbox; what it says is
// redacted with r.
func Report(ctx context.Context, version string, servers []Server, problems []string, box *shell.Sandbox, r *events.Redactor,
	running func(context.Context) ([]State, bool)) []string {
	if len(servers) == 0 && len(problems) == 0 {
		return []string{"MCP servers: none declared (config.yaml mcp_servers)"}
	}
	var lines []string
	if states, ok := running(ctx); ok {
		lines = append([]string{"MCP servers (as the running crew serve has them):"}, stateLines(states)...)
	} else {
		lines = append([]string{"MCP servers:"}, statusLines(ctx, version, servers, box, r)...)
	}
	for _, p := range problems {
		lines = append(lines, "  "+p)
	}
	return lines
}

// stateLines are the running crew's states, one line a server.
func stateLines(states []State) []string {
	var lines []string
	for _, st := range states {
		l := fmt.Sprintf("  %s (%s %s): %s", st.Name, st.Transport, st.Where, st.State)
		if st.State == "needs login" {
			l = fmt.Sprintf("  %s (%s %s): %s", st.Name, st.Transport, st.Where, st.Error)
		} else if st.Error != "" {
			l += ": " + st.Error
		}
		if st.State != "not started" {
			l += fmt.Sprintf(", %d tools", st.Tools)
		}
		if st.Transport == "stdio" {
			switch st.Restarts {
			case 0:
				l += ", never restarted"
			case 1:
				l += ", restarted once"
			default:
				l += fmt.Sprintf(", restarted %d times", st.Restarts)
			}
			if st.LastEnded != "" {
				l += " (last process: " + st.LastEnded + ")"
			}
		}
		lines = append(lines, l)
	}
	return lines
}

// statusLines connect to every server now, one line a server and one for
// each of its problems.
func statusLines(ctx context.Context, version string, servers []Server, box *shell.Sandbox, r *events.Redactor) []string {
	pool := NewPool(PoolConfig{Version: version, Servers: servers, Sandbox: box, Secrets: r})
	defer pool.Close()
	var lines []string
	for _, st := range pool.Status(ctx) {
		var nl NeedsLogin
		if errors.As(st.Err, &nl) {
			lines = append(lines, fmt.Sprintf("  %s (%s %s): needs login: run crew mcp login %s", st.Name, st.Transport, st.URL, st.Name))
			continue
		}
		if st.Err != nil {
			lines = append(lines, fmt.Sprintf("  %s (%s %s): does not answer: %v", st.Name, st.Transport, st.URL, st.Err))
			continue
		}
		if st.LoggedIn {
			st.Problems = append([]string{"logged in (OAuth; crew mcp logout " + st.Name + " revokes it)"}, st.Problems...)
		}
		ro := "none"
		if len(st.ReadOnly) > 0 {
			ro = strings.Join(st.ReadOnly, ", ")
		}
		lines = append(lines, fmt.Sprintf("  %s (%s %s): answers, %d tools (%d hidden), read-only: %s", st.Name, st.Transport, st.URL, len(st.Tools), st.Hidden, ro))
		for _, p := range st.Problems {
			lines = append(lines, "    "+p)
		}
	}
	return lines
}
