package main

import (
	"context"
	"fmt"

	"github.com/my-agent-crew/crew/tools/browser"
)

// runBrowser is crew browser login <agent> [url]: a headed window on the
// agent's browser profile for the owner to sign in.
func runBrowser(ctx context.Context, env *cliEnv, args []string) error {
	fs, homeFlag := newFlags(env, "browser")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) < 2 || len(rest) > 3 || rest[0] != "login" {
		fs.Usage()
		return exitError{2}
	}
	dir, h, err := openHome(env, *homeFlag)
	if err != nil {
		return err
	}
	agent := rest[1]
	if _, ok := h.Agents[agent]; !ok {
		return fmt.Errorf("%q is not a loaded agent of %s", agent, dir)
	}
	url := ""
	if len(rest) == 3 {
		url = rest[2]
	}
	return browser.Login(ctx, browser.LoginConfig{Home: dir, Agent: agent, URL: url, Getenv: env.getenv, Out: env.stdout})
}
