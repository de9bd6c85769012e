package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/app"
	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/projections"
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
	if line := runningServer(ctx, dir); line != "" {
		fmt.Fprintln(w, line)
	}
	ids := slices.Sorted(maps.Keys(h.Agents))
	fmt.Fprintf(w, "agents: %s\n", strings.Join(ids, ", "))
	for _, p := range h.Problems {
		fmt.Fprintf(w, "  skipped: %v\n", p)
	}

	printLines(w, home.Versions())
	printStore(ctx, w, dir, h)
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

// printStore reports the event store and projection lag, from the running
// server when there is one, else by opening the store.
func printStore(ctx context.Context, w io.Writer, dir string, h *home.Home) {
	if h.Config.NATS.URL != "" {
		fmt.Fprintf(w, "event log: NATS %s: %s\n", events.RedactURL(h.Config.NATS.URL), app.ClusterReport(ctx, h.Config))
		fmt.Fprintf(w, "projections: %s\n", filepath.Join(dir, "data", "projections.db"))
	} else {
		fmt.Fprintln(w, home.StoreFiles(dir))
	}
	a, err := app.Open(ctx, dir, h, app.Options{StoreOnly: true})
	if errors.Is(err, home.ErrStoreBusy) {
		info, ierr := home.ReadServeInfo(dir)
		if ierr != nil {
			fmt.Fprintf(w, "  held by another process: %v\n", ierr)
			return
		}
		fmt.Fprintf(w, "  held by crew serve (pid %d) at %s\n", info.PID, info.URL)
		printLines(w, app.ServerHealth(ctx, info.URL))
		return
	}
	if err != nil {
		fmt.Fprintf(w, "  cannot open: %v\n", err)
		return
	}
	defer a.Close()
	si, err := a.Log().Stream().Info(ctx)
	if err != nil {
		fmt.Fprintf(w, "  stream: %v\n", err)
		return
	}
	fmt.Fprintf(w, "  stream CREW: %d events, %s, sequences %d..%d\n", si.State.Msgs, home.HumanBytes(int64(si.State.Bytes)), si.State.FirstSeq, si.State.LastSeq)
	for _, p := range projections.All() {
		cp, err := projections.Checkpoint(a.DB(), p.Name())
		if err != nil {
			fmt.Fprintf(w, "  projection %s: %v\n", p.Name(), err)
			continue
		}
		fmt.Fprintf(w, "  projection %s: at %d, lag %d\n", p.Name(), cp, si.State.LastSeq-min(cp, si.State.LastSeq))
	}
}

// runningServer names where the running crew serve of the home listens
// and its real URL (what it wrote to data/serve.json at start, checked by
// asking it), "" when none answers there.
func runningServer(ctx context.Context, dir string) string {
	info, err := home.ReadServeInfo(dir)
	if err != nil || info.URL == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, info.URL+"/healthz", nil)
	if err != nil {
		return ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	resp.Body.Close()
	listen := cmp.Or(info.Listen, "?")
	return fmt.Sprintf("server: crew serve (pid %d) listens on %s: %s", info.PID, listen, info.URL)
}
