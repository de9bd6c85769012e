package main

import (
	"context"
	"fmt"

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
	p.Write(env.stdout)
	return nil
}
