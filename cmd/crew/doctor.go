package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/my-agent-crew/crew/cmd/crew/app"
	"github.com/my-agent-crew/crew/cmd/crew/home"
)

func runDoctor(ctx context.Context, env *cliEnv, args []string) error {
	fs, homeFlag := newFlags(env, "doctor")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	dir, err := homeDir(env, *homeFlag)
	if err != nil {
		return err
	}
	w := env.stdout
	fmt.Fprintf(w, "home: %s\n", dir)
	h, err := home.Load(dir)
	if err != nil {
		fmt.Fprintf(w, "config: %v\n", err)
		return exitError{1}
	}
	fmt.Fprintf(w, "config: ok (timezone %s, nats.sync %s, listen %s)\n", h.Config.Timezone, h.Config.NATS.Sync, h.Config.Listen)
	if line := app.RunningServer(ctx, dir); line != "" {
		fmt.Fprintln(w, line)
	}
	ids := slices.Sorted(maps.Keys(h.Agents))
	fmt.Fprintf(w, "agents: %s\n", strings.Join(ids, ", "))
	for _, p := range h.Problems {
		fmt.Fprintf(w, "  skipped: %v\n", p)
	}

	printLines(w, home.Versions())
	printLines(w, app.StoreReport(ctx, dir, h))
	printLines(w, h.NATSAccess())
	printLines(w, h.WebTrust(env.getenv))
	printLines(w, app.ShellReport(h))
	printLines(w, h.Routes(env.getenv))
	printLines(w, app.WebReport(h, env.getenv))
	printLines(w, app.RecallReport(h, env.getenv))
	printLines(w, app.BrowserReport(h))
	printLines(w, app.MCPReport(ctx, h, env.redactor(), env.getenv))
	printLines(w, app.DesktopReport(ctx, h))
	a, err := app.Open(ctx, dir, h, app.Options{ReadOnly: true, Getenv: env.getenv, Secrets: env.redactor()})
	if err != nil {
		fmt.Fprintf(w, "tools: %v\n", err)
		return nil
	}
	defer a.Close()
	printLines(w, a.AgentChecks())
	return nil
}

// printLines prints report lines, one a line.
func printLines(w io.Writer, lines []string) {
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
