package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/consolidate"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/schedule"
	"github.com/tmc/langchaingo/llms"
)

// newMemory wires the consolidation service (R-MEM-2) onto an open log.
func newMemory(log *events.Log, h *home.Home, agents func(id string) (loop.Agent, bool), models func(string) (llms.Model, error), logger *slog.Logger) *consolidate.Service {
	return consolidate.New(consolidate.Config{Log: log, Models: models, Location: h.Config.Location(), Logger: logger,
		Agents: func(id string) (consolidate.Agent, bool) { a, ok := agents(id); return consolidate.AgentOf(a), ok }})
}

func runMemory(ctx context.Context, env *cliEnv, args []string) error {
	fs, homeFlag := newFlags(env, "memory")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 || fs.Arg(0) != "consolidate" {
		fs.Usage()
		return exitError{2}
	}
	agent := fs.Arg(1)
	if err := events.ValidID(agent); err != nil {
		return err
	}
	dir, h, err := openHome(env, *homeFlag)
	if err != nil {
		return err
	}
	p, err := consolidateHere(ctx, env, dir, h, agent)
	if errors.Is(err, home.ErrStoreBusy) {
		var c web.Client
		if c, err = h.ServerClient(dir, env.getenv); err == nil {
			p, err = c.Consolidate(ctx, agent)
		}
	}
	if err != nil {
		return err
	}
	printProposal(env.stdout, p)
	return nil
}

// consolidateHere runs the service in this process on a stopped home, with
// the routes serve would use. home.ErrStoreBusy means a server holds the store.
func consolidateHere(ctx context.Context, env *cliEnv, dir string, h *home.Home, agent string) (consolidate.Proposal, error) {
	if _, ok := h.Agents[agent]; !ok {
		return consolidate.Proposal{}, fmt.Errorf("%w: %q is not a loaded agent of %s", consolidate.ErrUnknownAgent, agent, dir)
	}
	quiet := slog.New(slog.DiscardHandler)
	st, err := openStore(ctx, dir, h.Config, quiet)
	if err != nil {
		return consolidate.Proposal{}, err
	}
	defer st.Close()
	mdl, override, note, err := h.Models(ctx, env.getenv)
	if err != nil {
		return consolidate.Proposal{}, err
	}
	fmt.Fprintln(env.stderr, note)
	reg, err := tools.New(allTools(schedule.NewCreateTool(nil), nil, nil, nil)...)
	if err != nil {
		return consolidate.Proposal{}, err
	}
	agents := h.LoopAgents(override, reg.Defaults())
	m, leave, err := joinFor(ctx, st, dir, "memory consolidate")
	if err != nil {
		return consolidate.Proposal{}, err
	}
	defer leave()
	ledger, err := home.OpenLedger(ctx, st.log, func() *home.Home { return h }, quiet, m.holder(), st.alive())
	if err != nil {
		return consolidate.Proposal{}, err
	}
	mem := newMemory(st.log, h, func(id string) (loop.Agent, bool) { a, ok := agents[id]; return a, ok }, ledger.Models(mdl.Model), quiet)
	return mem.Consolidate(ctx, agent, consolidate.TriggerCLI)
}

// printProposal shows what was filed and the diff.
func printProposal(w io.Writer, p consolidate.Proposal) {
	fmt.Fprintf(w, "proposal %s for %s: %s (+%d −%d)\n", p.ID, p.Agent, p.Kind, p.Added, p.Removed)
	if p.Reason != "" {
		fmt.Fprintf(w, "  %s\n", p.Reason)
	}
	if p.Status == consolidate.StatusApplied {
		fmt.Fprintf(w, "applied to MEMORY.md; to undo: POST /api/memory/proposals/%s/rollback, or Roll back on /memory\n", p.ID)
	} else {
		fmt.Fprintf(w, "waits for you: Approve or Reject on /memory, or POST /api/memory/proposals/%s {\"decision\":\"approve\"}\n", p.ID)
	}
	fmt.Fprintln(w)
	for _, l := range p.Diff {
		fmt.Fprintf(w, "%c %s\n", l.Op, l.Text)
	}
}
