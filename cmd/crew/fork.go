package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/my-agent-crew/crew/cmd/crew/app"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop/llm"
)

// runFork is crew replay --from-step N --route X: through the running
// server when there is one (it holds the log), else on the store here.
func runFork(ctx context.Context, env *cliEnv, homeFlag, runID string, step int, route string) error {
	if step < 1 {
		return fmt.Errorf("--from-step %d: a step is 1 or more (the runs page numbers them)", step)
	}
	if route == "" {
		return errors.New("--from-step needs --route ROUTE: the model that answers the step in place of the recorded reply")
	}
	if _, err := llm.ParseRoute(route); err != nil {
		return fmt.Errorf("--route: %w", err)
	}
	dir, h, err := openHome(env, homeFlag)
	if err != nil {
		return err
	}
	// On a stopped home this process holds the store and runs the
	// projections and a worker (no recovery scan, no scheduler: nothing
	// but the fork and what it delegates runs).
	logger := slog.New(slog.NewTextHandler(env.redactor().Writer(env.stderr), &slog.HandlerOptions{Level: slog.LevelWarn}))
	return onStore(ctx, env, dir, h, options(env, "replay --from-step", app.Options{Logger: logger}), func(a *app.App) error {
		return forkHere(ctx, env, a, runID, step, route)
	}, func(c web.Client) error {
		fk, err := c.Fork(ctx, runID, step, route)
		if err == nil {
			printFork(env, fk)
			fmt.Fprintf(env.stdout, "the server runs it: %s/c/%s/runs\n", c.URL, fk.Conversation)
		}
		return err
	})
}

// forkHere forks on a stopped home, waits until the fork's run has
// finished or waits on the owner, and reports it.
func forkHere(ctx context.Context, env *cliEnv, a *app.App, runID string, step int, route string) error {
	f := a.Forker()
	fk, err := f.Fork(ctx, runID, step, route)
	if err != nil {
		return err
	}
	printFork(env, fk)
	end, err := f.Ended(ctx, fk, a.Worker)
	if err == nil {
		end.Write(env.stdout)
	}
	return err
}

func printFork(env *cliEnv, fk web.Forked) {
	fmt.Fprintf(env.stdout, "forked run %s of %s at step %d onto %s: conversation %s, run %s\n",
		fk.From.RunID, fk.From.Conversation, fk.From.Step, fk.Route, fk.Conversation, fk.RunID)
}
