package main

import (
	"context"
	"fmt"

	"github.com/my-agent-crew/crew/cmd/crew/app"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop/team"
)

// runTeam is the host's side of teams: removing a worktree, which the
// model cannot (seed 001 §10).
func runTeam(ctx context.Context, env *cliEnv, args []string) error {
	fs, homeFlag := newFlags(env, "team")
	discard := fs.Bool("discard", false, "remove even with tracked, untracked or ignored changes, which are lost")
	teamID := fs.String("team", "", "the team (its lead's conversation), when the name is on several")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() != 3 || fs.Arg(0) != "worktree" || fs.Arg(1) != "remove" {
		fs.Usage()
		return exitError{2}
	}
	name := fs.Arg(2)
	if err := events.ValidID(name); err != nil {
		return err
	}
	dir, h, err := openHome(env, *homeFlag)
	if err != nil {
		return err
	}
	var msg string
	err = onStore(ctx, env, dir, h, app.Options{StoreOnly: true, Secrets: env.redactor()}, func(a *app.App) (err error) {
		// The server is stopped: no teammate holds a folder.
		msg, err = team.New(team.Config{Log: a.Log(), Home: dir, Sandbox: a.Sandbox()}).Remove(ctx, name, *teamID, *discard)
		return err
	}, func(c web.Client) (err error) {
		msg, err = c.RemoveWorktree(ctx, name, *teamID, *discard)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(env.stdout, msg)
	return nil
}
