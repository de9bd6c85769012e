// Command crew runs and inspects a my-agent-crew home: the server, its event
// log and its projections.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools/script"
)

// command is one subcommand of crew.
type command struct {
	name    string
	usage   string // arguments after the name
	summary string
	run     func(ctx context.Context, env *cliEnv, args []string) error
}

var commands []command

func init() {
	commands = []command{
		{"serve", "[--listen ADDR]", "run the server: embedded NATS, projections, HTTP API", runServe},
		{"init", "", "create the home with a working master agent (changes nothing if it exists)", runInit},
		{"agent", "add <template>", "install a built-in agent: fullstack-developer, kongming, researcher", runAgent},
		{"doctor", "", "print home, versions, event store, projection lag, sandbox, model routes", runDoctor},
		{"export", "<conversation> [-o FILE]", "write a conversation's events as JSONL, hash-chained under the home's audit key", runExport},
		{"replay", "<run-id> [--route ROUTE] | <run-id> --from-step N --route ROUTE", "re-drive a recorded run with its recorded replies and results; show the first divergence; --from-step forks it at step N onto ROUTE", runReplay},
		{"verify", "<FILE> [--key-file F | --no-key]", "check an export's keyed hash chain (written by this home?); name the first broken line", runVerify},
		{"projections", "rebuild [NAME]", "rebuild read models from the event log (server stopped)", runProjections},
		{"browser", "login <agent> [url]", "open a window on an agent's browser profile to sign in (its browser tools wait)", runBrowser},
		{"team", "worktree remove <name> [--discard] [--team ID]", "remove a team task's git worktree (refused while its task runs or it has changes; the wt/<name> branch is kept)", runTeam},
		{"stop", "<conversation> [--scope run|queue|all] | --all", "stop a conversation's running turn and drop its waiting messages (or only one of them), or every running conversation, on the running server", runStop},
		{"mcp", "import <FILE> [--agent ID] [--dry-run] | serve | login <server> [--timeout D] | logout <server>", "import: add the servers of a Claude Desktop, Claude Code, Cursor or VS Code MCP config to config.yaml (their secrets to the env file), saying what could not be mapped; serve: the crew's MCP tools (crew_send, crew_read, …) on stdio for a desktop or editor client, relayed to the running server's /mcp; login: OAuth for a remote server that asks for it (prints the URL to open; the browser comes back to 127.0.0.1); logout: revoke and delete that login", runMCP},
		{"memory", "consolidate <agent>", "rewrite an agent's MEMORY.md from the last 7 days of notes, as a proposal", runMemory},
	}
}

// cliEnv is what commands read of the process, so tests can run them in
// process with their own streams and environment.
type cliEnv struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	// environ lists the process environment (os.Environ) for the secret
	// redactor, and unsetenv removes a variable from it once serve has
	// read its secrets; both nil in process tests, whose environment is
	// the test's own.
	environ  func() []string
	unsetenv func(string) error
	// secrets are the home's secrets, taught by loadHome; the App's log,
	// and the command's own log, redact with them.
	secrets *events.Redactor
}

// redactor is env's redactor, made on first use.
func (e *cliEnv) redactor() *events.Redactor {
	if e.secrets == nil {
		e.secrets = events.NewRedactor()
	}
	return e.secrets
}

// exitError carries a process exit code with an already printed message.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	// The tool_script child (R-SCR): not a command of the CLI, started by
	// the server with no environment and spoken to over stdin/stdout.
	if len(os.Args) == 2 && os.Args[1] == "__script" {
		os.Exit(script.Child(os.Stdin, os.Stdout))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := &cliEnv{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, environ: os.Environ, unsetenv: os.Unsetenv}
	os.Exit(run(ctx, env, os.Args[1:]))
}

func run(ctx context.Context, env *cliEnv, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(env.stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, env, args[1:])
		var ee exitError
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, &ee):
			return ee.code
		default:
			fmt.Fprintf(env.stderr, "crew %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(env.stderr, "crew: unknown command %q (run \"crew help\")\n", args[0])
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "crew runs a crew of LLM agents for one owner, on an event log.")
	fmt.Fprintln(w, "\nUsage: crew <command> [flags]\n\nCommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nEvery command takes --home DIR (default $CREW_HOME or ~/.my-agent-crew) and --help.")
}

// newFlags makes a flag set with --home and a usage line for the command.
func newFlags(env *cliEnv, name string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("crew "+name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	home := fs.String("home", "", "home directory (default $CREW_HOME or ~/.my-agent-crew)")
	for _, c := range commands {
		if c.name == name {
			fs.Usage = func() {
				fmt.Fprintf(fs.Output(), "Usage: crew %s %s\n\n%s\n\nFlags:\n", c.name, c.usage, c.summary)
				fs.PrintDefaults()
			}
		}
	}
	return fs, home
}

// parse parses flags, printing help to stdout for --help.
func parse(env *cliEnv, fs *flag.FlagSet, args []string) error {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fs.SetOutput(env.stdout)
			fs.Usage()
			return flag.ErrHelp
		}
	}
	if err := fs.Parse(interleave(fs, args)); err != nil {
		return exitError{2}
	}
	return nil
}

// interleave moves flags after positional arguments to the front, so
// "crew export c1 -o f" works like "crew export -o f c1".
func interleave(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			flags = append(flags, a)
			name := a[1:]
			if name[0] == '-' {
				name = name[1:]
			}
			if f := fs.Lookup(name); f != nil && !isBool(f) && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
