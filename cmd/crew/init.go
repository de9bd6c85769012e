package main

import (
	"context"
	"fmt"

	"github.com/my-agent-crew/crew/cmd/crew/home"
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
