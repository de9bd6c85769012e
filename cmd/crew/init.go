package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/my-agent-crew/crew/cmd/crew/app"
	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/gateways/web"
)

func runInit(ctx context.Context, env *cliEnv, args []string) error {
	fs, homeFlag := newFlags(env, "init")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	dir, err := homeDir(env, *homeFlag)
	if err != nil {
		return err
	}
	created, err := home.Init(dir)
	if err != nil {
		return err
	}
	if !created {
		fmt.Fprintf(env.stdout, "home already exists at %s; nothing changed\n", dir)
		return nil
	}
	fmt.Fprintf(env.stdout, "created home at %s\nnext: put secrets in %s/env (mode 600), then run: crew serve\n", dir, dir)
	return nil
}

// homeDir is --home, else $CREW_HOME, else ~/.my-agent-crew.
func homeDir(env *cliEnv, flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	return home.Dir(env.getenv)
}

// openHome is the preamble of the commands that work on a home: the home
// the flag or the environment names, loaded with loadHome.
func openHome(env *cliEnv, flagValue string) (string, *home.Home, error) {
	dir, err := homeDir(env, flagValue)
	if err != nil {
		return "", nil, err
	}
	h, err := loadHome(env, dir)
	return dir, h, err
}

// loadHome loads config and agents, reporting broken agents on stderr. A
// broken config.yaml or an unsafe env file is returned as the error.
func loadHome(env *cliEnv, dir string) (*home.Home, error) {
	h, err := home.Load(dir)
	if err != nil {
		return nil, err
	}
	for _, p := range h.Problems {
		fmt.Fprintf(env.stderr, "skipped agent: %v\n", p)
	}
	h.LoadSecrets(env.redactor(), env.environ)
	return h, nil
}

// onStore runs here on an App opened with o when no server holds the
// home's store, else there with the running server's client: the commands
// that read or write the store work with the server up or down.
func onStore(ctx context.Context, env *cliEnv, dir string, h *home.Home, o app.Options, here func(*app.App) error, there func(web.Client) error) error {
	a, err := app.Open(ctx, dir, h, o)
	if errors.Is(err, home.ErrStoreBusy) {
		c, err := app.ServerClient(h, dir, env.getenv)
		if err != nil {
			return err
		}
		return there(c)
	}
	if err != nil {
		return err
	}
	defer a.Close()
	return here(a)
}
