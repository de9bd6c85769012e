package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/my-agent-crew/crew/cmd/crew/app"
	"github.com/my-agent-crew/crew/cmd/crew/home"
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
	p, err := consolidateHere(ctx, env, dir, h, agent)
	if errors.Is(err, home.ErrStoreBusy) {
		var c web.Client
		if c, err = app.ServerClient(h, dir, env.getenv); err == nil {
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
// the crew serve would build. home.ErrStoreBusy means a server holds the store.
func consolidateHere(ctx context.Context, env *cliEnv, dir string, h *home.Home, agent string) (consolidate.Proposal, error) {
	if _, ok := h.Agents[agent]; !ok {
		return consolidate.Proposal{}, fmt.Errorf("%w: %q is not a loaded agent of %s", consolidate.ErrUnknownAgent, agent, dir)
	}
	a, err := app.Open(ctx, dir, h, options(env, "memory consolidate", app.Options{NoWorker: true}))
	if err != nil {
		return consolidate.Proposal{}, err
	}
	defer a.Close()
	fmt.Fprintln(env.stderr, a.Routes)
	return a.Memory.Consolidate(ctx, agent, consolidate.TriggerCLI)
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
