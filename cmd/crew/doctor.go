package main

import (
	"context"
	"fmt"
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

	// Each section is a feature's own lines (its package's Report), in
	// this order; the agents' checks need the crew built, read-only.
	sections := [][]string{home.Versions(), app.StoreReport(ctx, dir, h), h.NATSAccess(), h.WebTrust(env.getenv),
		app.ShellReport(h), h.Routes(env.getenv), app.WebReport(h, env.getenv), app.RecallReport(h, env.getenv),
		app.BrowserReport(h), app.MCPReport(ctx, h, env.redactor(), env.getenv), app.DesktopReport(ctx, h)}
	a, err := app.Open(ctx, dir, h, app.Options{ReadOnly: true, Getenv: env.getenv, Secrets: env.redactor()})
	if err != nil {
		sections = append(sections, []string{fmt.Sprintf("tools: %v", err)})
	} else {
		defer a.Close()
		sections = append(sections, a.AgentChecks())
	}
	for _, l := range slices.Concat(sections...) {
		fmt.Fprintln(w, l)
	}
	return nil
}
