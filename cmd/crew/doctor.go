package main

import (
	"context"
	"fmt"

	"github.com/my-agent-crew/crew/cmd/crew/app"
	"github.com/my-agent-crew/crew/cmd/crew/home"
)

func runDoctor(ctx context.Context, env *cliEnv, args []string) error {
	fs, homeFlag := newFlags(env, "doctor")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	dir, err := homeDir(env, *homeFlag)
	if err != nil {
		return err
	}
	w := env.stdout
	fmt.Fprintf(w, "home: %s\n", dir)
	h, err := home.Load(dir)
	if err != nil {
		fmt.Fprintf(w, "config: %v\n", err)
		return exitError{1}
	}
	fmt.Fprintf(w, "config: ok (timezone %s, nats.sync %s, listen %s)\n", h.Config.Timezone, h.Config.NATS.Sync, h.Config.Listen)
	app.Doctor(ctx, dir, h, env.redactor(), env.getenv, w)
	return nil
}
