package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"

	"github.com/my-agent-crew/crew/cmd/crew/app"
	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
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
	for _, l := range rep.Lines {
		if l.OK {
			fmt.Fprintf(env.stdout, "%4d  step %-3d %-20s ok\n", l.Index, l.Step, l.Type)
		}
	}
	if d := rep.Diverged; d != nil {
		fmt.Fprintf(env.stdout, "%4d  step %-3d %-20s DIVERGED\n      expected: %s\n      got:      %s\n", d.Index, d.Step, d.Type, d.Expected, d.Got)
		fmt.Fprintf(env.stderr, "run %s diverges at event %d (step %d)\n", runID, d.Index, d.Step)
		return exitError{1}
	}
	fmt.Fprintf(env.stdout, "run %s of %s replayed: %d events identical, no tool run, no network\n", runID, rep.Conversation, len(rep.Lines))
	return nil
}

// recordedRun returns the run's agent and its conversation's events, from
// the store when the server is stopped, else from the running server.
func recordedRun(ctx context.Context, env *cliEnv, dir string, h *home.Home, runID string) (string, []events.Envelope, error) {
	a, err := app.Open(ctx, dir, h, app.Options{StoreOnly: true, Secrets: env.redactor()})
	if errors.Is(err, home.ErrStoreBusy) {
		c, err := app.ServerClient(h, dir, env.getenv)
		if err != nil {
			return "", nil, err
		}
		return c.RecordedRun(ctx, runID)
	}
	if err != nil {
		return "", nil, err
	}
	defer a.Close()
	run, err := projections.GetRun(a.DB(), runID)
	if err != nil {
		return "", nil, fmt.Errorf("run %s: %w (is the projection rebuilt? crew projections rebuild)", runID, err)
	}
	envs, err := a.Log().ReadAll(ctx, events.Conv(run.Conversation).Filter(), 0)
	if err != nil {
		return "", nil, err
	}
	// A lead's or a teammate's turn reads its team's board: the team's
	// events (and a teammate's lead's) go with the conversation's, in
	// stream order.
	team := run.Conversation
	for _, env := range envs {
		if env.Type == events.TypeConversationOpened {
			if e, err := env.Decode(); err == nil && e.(*events.ConversationOpened).Team != "" {
				team = e.(*events.ConversationOpened).Team
			}
			break
		}
	}
	filters := []string{events.Team(team).Filter(), events.MailOf(team)}
	if team != run.Conversation {
		filters = append(filters, events.Conv(team).Filter()) // a teammate works in its lead's workspace
	}
	for _, filter := range filters {
		side, err := a.Log().ReadAll(ctx, filter, 0)
		if err != nil {
			return "", nil, err
		}
		envs = append(envs, side...)
	}
	slices.SortStableFunc(envs, func(x, y events.Envelope) int { return cmp.Compare(x.Seq, y.Seq) })
	return run.Agent, envs, nil
}
