package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/my-agent-crew/crew/cmd/crew/app"
	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/projections"
)

func runReplay(ctx context.Context, env *cliEnv, args []string) error {
	fs, homeFlag := newFlags(env, "replay")
	route := fs.String("route", "", "answer model calls with this route (e.g. fake:script:FILE) instead of the recorded replies; with --from-step, the route the fork continues on")
	fromStep := fs.Int("from-step", 0, "fork the run at step N into a new conversation that continues live on --route (the original is untouched)")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError{2}
	}
	runID := fs.Arg(0)
	if err := events.ValidID(runID); err != nil {
		return err
	}
	forking := false
	fs.Visit(func(f *flag.Flag) { forking = forking || f.Name == "from-step" })
	if forking {
		return runFork(ctx, env, *homeFlag, runID, *fromStep, *route)
	}
	dir, h, err := openHome(env, *homeFlag)
	if err != nil {
		return err
	}
	agentID, envs, err := recordedRun(ctx, env, dir, h, runID)
	if err != nil {
		return err
	}
	// The crew as serve builds it, on no store: nothing written, no tool run.
	a, err := app.Open(ctx, dir, h, app.Options{ReadOnly: true, Getenv: env.getenv, Secrets: env.redactor()})
	if err != nil {
		return err
	}
	defer a.Close()
	agent, ok := a.Crew.Agent(agentID)
	if !ok {
		return fmt.Errorf("run %s was made by agent %q, which is not loaded now", runID, agentID)
	}
	var override llm.Model
	if *route != "" {
		r, err := llm.ParseRoute(*route)
		if err != nil {
			return err
		}
		if override, err = app.Providers(h, env.getenv).Model(r); err != nil {
			return err
		}
	}
	rep, err := loop.ReplayWith(ctx, envs, runID, agent, a.Deps, override)
	if err != nil {
		return err
	}
	if rep.Write(env.stdout) {
		fmt.Fprintf(env.stderr, "run %s diverges at event %d (step %d)\n", runID, rep.Diverged.Index, rep.Diverged.Step)
		return exitError{1}
	}
	return nil
}

// recordedRun returns the run's agent and what its replay reads, from the
// store when the server is stopped, else from the running server.
func recordedRun(ctx context.Context, env *cliEnv, dir string, h *home.Home, runID string) (agent string, envs []events.Envelope, err error) {
	err = onStore(ctx, env, dir, h, app.Options{StoreOnly: true, Secrets: env.redactor()}, func(a *app.App) error {
		run, err := projections.GetRun(a.DB(), runID)
		if err != nil {
			return fmt.Errorf("run %s: %w (is the projection rebuilt? crew projections rebuild)", runID, err)
		}
		agent = run.Agent
		envs, err = events.Recorded(ctx, a.Log(), run.Conversation)
		return err
	}, func(c web.Client) error {
		agent, envs, err = c.RecordedRun(ctx, runID)
		return err
	})
	return agent, envs, err
}
