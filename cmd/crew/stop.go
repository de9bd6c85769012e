package main

import (
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
	if *all {
		list, _ := got["stopped"].([]any)
		for _, v := range list {
			m, _ := v.(map[string]any)
			fmt.Fprintf(env.stdout, "stopped %v (run %v, %v waiting dropped)\n", m["conversation_id"], orNone(m["run_id"]), m["dropped"])
		}
		return nil
	}
	fmt.Fprintf(env.stdout, "stopped %s (run %v, %v waiting dropped)\n", conv, orNone(got["run_id"]), got["dropped"])
	return nil
}

func orNone(v any) any {
	if s, ok := v.(string); !ok || s == "" {
		return "none"
	}
	return v
}
