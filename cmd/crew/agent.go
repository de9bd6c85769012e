package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/my-agent-crew/crew/cmd/crew/home"
)

// runAgent is `crew agent <subcommand>`; today only `add <template>`
// installs a built-in agent under agents/ (R-HOME-5).
func runAgent(ctx context.Context, env *cliEnv, args []string) error {
	if len(args) == 0 {
		agentUsage(env.stderr)
		return exitError{2}
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		agentUsage(env.stdout)
		return flag.ErrHelp
	case "add":
		return runAgentAdd(env, args[1:])
	}
	fmt.Fprintf(env.stderr, "crew agent: unknown subcommand %q\n\n", args[0])
	agentUsage(env.stderr)
	return exitError{2}
}

func runAgentAdd(env *cliEnv, args []string) error {
	fs, homeFlag := newFlags(env, "agent")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(env.stderr, "crew agent add: want exactly one template (%s)\n\n", strings.Join(home.Templates(), ", "))
		fs.Usage()
		return exitError{2}
	}
	dir, err := homeDir(env, *homeFlag)
	if err != nil {
		return err
	}
	agentDir, err := home.AddAgent(dir, fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "installed agent %s at %s; restart crew serve to load it\n", fs.Arg(0), agentDir)
	return nil
}

func agentUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: crew agent add <template> [--home DIR]")
	fmt.Fprintf(w, "\nInstall a built-in agent as agents/<template>/ of the home.\nTemplates: %s\n", strings.Join(home.Templates(), ", "))
	fmt.Fprintln(w, "\nFlags:\n  --home DIR  home directory (default $CREW_HOME or ~/.my-agent-crew)")
}
