package main

import (
	"cmp"
	"context"
	"fmt"

	"github.com/my-agent-crew/crew/cmd/crew/app"
	"github.com/my-agent-crew/crew/events"
)

// runStop is the owner's stop from the terminal (issue 27): it asks the
// running server, by cli.
func runStop(ctx context.Context, env *cliEnv, args []string) error {
	fs, homeFlag := newFlags(env, "stop")
	all := fs.Bool("all", false, "stop every running conversation of the home")
	scope := fs.String("scope", events.StopAll, "run (the running turn and its delegated children), queue (the waiting messages) or all")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	if (*all && fs.NArg() != 0) || (!*all && fs.NArg() != 1) {
		fs.Usage()
		return exitError{2}
	}
	conv := ""
	if !*all {
		conv = fs.Arg(0)
		if err := events.ValidID(conv); err != nil {
			return fmt.Errorf("conversation %q: %w", conv, err)
		}
	}
	dir, h, err := openHome(env, *homeFlag)
	if err != nil {
		return err
	}
	c, err := app.ServerClient(h, dir, env.getenv)
	if err != nil {
		return fmt.Errorf("crew stop needs the running server: %w", err)
	}
	got, err := c.Stop(ctx, conv, *scope)
	if err != nil {
		return err
	}
	for _, st := range got {
		fmt.Fprintf(env.stdout, "stopped %s (run %s, %d waiting dropped)\n", st.Conversation, cmp.Or(st.RunID, "none"), st.Dropped)
	}
	return nil
}
