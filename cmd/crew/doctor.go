package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/kit"
	"github.com/my-agent-crew/crew/tools/schedule"
	"github.com/my-agent-crew/crew/tools/shell"
)

// coreModules are the design card's dependencies, reported by doctor.
var coreModules = []string{
	"github.com/nats-io/nats-server/v2", "github.com/nats-io/nats.go", "go.etcd.io/bbolt",
	"github.com/goccy/go-yaml", "github.com/go-co-op/gocron/v2", "github.com/chromedp/chromedp",
	"github.com/tmc/langchaingo", "github.com/a-h/templ",
}

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
	ids := slices.Sorted(maps.Keys(h.Agents))
	fmt.Fprintf(w, "agents: %s\n", strings.Join(ids, ", "))
	for _, p := range h.Problems {
		fmt.Fprintf(w, "  skipped: %v\n", p)
	}

	printVersions(w)
	printStore(ctx, w, dir, h)
	printNATSAccess(w, h)
	printLines(w, h.WebTrust(env.getenv))
	printShellProtections(w)
	printRoutes(w, h, env.getenv)
	printAgentChecks(w, h)
	return nil
}

func printVersions(w io.Writer) {
	fmt.Fprintf(w, "versions: %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, ", crew %s\n", moduleVersion(bi))
	have := map[string]string{}
	for _, d := range bi.Deps {
		have[d.Path] = d.Version
	}
	for _, m := range coreModules {
		if v, ok := have[m]; ok {
			fmt.Fprintf(w, "  %s %s\n", m, v)
		}
	}
}

func moduleVersion(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " (" + s.Value[:12] + ")"
		}
	}
	return v
}

// printStore reports the event store and projection lag, from the running
// server when there is one, else by opening the store.
func printStore(ctx context.Context, w io.Writer, dir string, h *home.Home) {
	natsDir := filepath.Join(dataDir(dir), "nats")
	fmt.Fprintf(w, "event store: %s (%s on disk), projections: %s\n", natsDir, humanBytes(dirSize(natsDir)), filepath.Join(dataDir(dir), "projections.db"))
	st, err := openStore(ctx, dir, h.Config, slog.New(slog.DiscardHandler))
	if errors.Is(err, home.ErrStoreBusy) {
		info, ierr := home.ReadServeInfo(dir)
		if ierr != nil {
			fmt.Fprintf(w, "  held by another process: %v\n", ierr)
			return
		}
		fmt.Fprintf(w, "  held by crew serve (pid %d) at %s\n", info.PID, info.URL)
		printServerHealth(ctx, w, info.URL)
		return
	}
	if err != nil {
		fmt.Fprintf(w, "  cannot open: %v\n", err)
		return
	}
	defer st.Close()
	si, err := st.log.Stream().Info(ctx)
	if err != nil {
		fmt.Fprintf(w, "  stream: %v\n", err)
		return
	}
	fmt.Fprintf(w, "  stream CREW: %d events, %s, sequences %d..%d\n", si.State.Msgs, humanBytes(int64(si.State.Bytes)), si.State.FirstSeq, si.State.LastSeq)
	for _, p := range projections.All() {
		cp, err := projections.Checkpoint(st.db, p.Name())
		if err != nil {
			fmt.Fprintf(w, "  projection %s: %v\n", p.Name(), err)
			continue
		}
		fmt.Fprintf(w, "  projection %s: at %d, lag %d\n", p.Name(), cp, si.State.LastSeq-min(cp, si.State.LastSeq))
	}
}

func printServerHealth(ctx context.Context, w io.Writer, url string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	status, projs, err := web.Client{URL: url}.Health(ctx)
	if err != nil {
		fmt.Fprintf(w, "  /healthz: %v\n", err)
		return
	}
	fmt.Fprintf(w, "  /healthz: %s\n", status)
	for _, p := range projs {
		fmt.Fprintf(w, "  projection %s: at %d, lag %d%s\n", p.Name, p.Checkpoint, p.Lag, errSuffix(p.Error))
	}
}

func errSuffix(s string) string {
	if s == "" {
		return ""
	}
	return ", stopped: " + s
}

func printNATSAccess(w io.Writer, h *home.Home) {
	if h.Config.NATS.Listen == "" {
		fmt.Fprintln(w, "nats CLI: the embedded server is in-process only; to inspect it, set nats.listen: 127.0.0.1:4222 in config.yaml, restart, then")
		fmt.Fprintln(w, "  go install github.com/nats-io/natscli/nats@v0.5.0 && nats --server nats://127.0.0.1:4222 stream info CREW")
		return
	}
	fmt.Fprintf(w, "nats CLI: nats --server nats://%s stream info CREW   (or: stream view CREW, sub 'crew.conv.>')\n", h.Config.NATS.Listen)
}

// printShellProtections lists each protection of shell commands and hooks, and
// whether this kernel gives it (each proven by running a command).
func printShellProtections(w io.Writer) {
	fmt.Fprintln(w, "shell protections (shell_run, script jobs and hooks; Landlock, network namespace and Unix-socket block when shell_network: false or shell_write_paths is set):")
	for _, p := range shell.Protections() {
		fmt.Fprintf(w, "  %s: %s\n", p.Name, p.Detail)
	}
}

func printRoutes(w io.Writer, h *home.Home, getenv func(string) string) {
	fmt.Fprintln(w, "model routes:")
	if r := getenv("MY_AGENT_ROUTES"); r != "" {
		fmt.Fprintf(w, "  MY_AGENT_ROUTES=%s overrides every agent\n", r)
	}
	ids := slices.Sorted(maps.Keys(h.Agents))
	for _, id := range ids {
		fmt.Fprintf(w, "  %s: routes %s\n", id, strings.Join(h.Agents[id].Routes, ", "))
	}
	key := "not set"
	if h.Getenv("OPENROUTER_API_KEY", getenv) != "" {
		key = "set"
	}
	ollama := h.Getenv("OLLAMA_HOST", getenv)
	if ollama == "" {
		ollama = "not set"
	}
	fmt.Fprintf(w, "  OPENROUTER_API_KEY %s, OLLAMA_HOST %s\n", key, ollama)
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// printAgentChecks runs the checks serve makes before it runs an agent
// (routes, tool names, shell patterns), so a skipped agent shows here too.
func printAgentChecks(w io.Writer, h *home.Home) {
	reg, err := tools.New(allTools(schedule.NewCreateTool(nil))...)
	if err != nil {
		fmt.Fprintf(w, "tools: %v\n", err)
		return
	}
	agents := h.LoopAgents(nil, reg.Defaults())
	ids := slices.Sorted(maps.Keys(agents))
	for _, id := range ids {
		if err := loop.CheckAgent(agents[id], reg); err != nil {
			fmt.Fprintf(w, "agent %s will be skipped: %v\n", id, err)
		}
		for _, err := range kit.Check(h.Dir, agents[id].Dir) {
			fmt.Fprintf(w, "agent %s: %v\n", id, err)
		}
	}
}

// printLines prints report lines, one a line.
func printLines(w io.Writer, lines []string) {
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
