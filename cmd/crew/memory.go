package main

import (
	"context"
	"fmt"
	"io"

	"github.com/my-agent-crew/crew/cmd/crew/app"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop/consolidate"
)

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
	if _, ok := h.Agents[agent]; !ok {
		return fmt.Errorf("%w: %q is not a loaded agent of %s", consolidate.ErrUnknownAgent, agent, dir)
	}
	var p consolidate.Proposal
	err = onStore(ctx, env, dir, h, options(env, "memory consolidate", app.Options{NoWorker: true}), func(a *app.App) (err error) {
		fmt.Fprintln(env.stderr, a.Routes)
		p, err = a.Memory.Consolidate(ctx, agent, consolidate.TriggerCLI)
		return err
	}, func(c web.Client) (err error) {
		p, err = c.Consolidate(ctx, agent)
		return err
	})
	if err != nil {
		return err
	}
	printProposal(env.stdout, p)
	return nil
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
