package tools

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/tools/shell"
)

//go:embed shell_run.md
var shellRunDescription string

// ShellRun runs a command line with /bin/sh in the workspace, in
// Sandbox (nil: every command is refused); Background runs it in the
// background (nil: run_in_background is refused).
type ShellRun struct {
	Background Backgrounder
	Sandbox    *shell.Sandbox
}

func (ShellRun) NeedsApproval() bool { return true }

func (ShellRun) Def() Def {
	return Def{Name: "shell_run", Description: shellRunDescription, Default: true}
}

type shellArgs struct {
	Command         string `json:"command" jsonschema:"Command line for /bin/sh -c, run in the workspace."`
	TimeoutSeconds  int    `json:"timeout_seconds,omitempty" jsonschema:"Kill the command after this many seconds. Default 120 (600 in the background), at most 600." schema:"minimum=1,maximum=600"`
	RunInBackground bool   `json:"run_in_background,omitempty" jsonschema:"Return at once; the exit code and the head and tail of the output arrive later as a task notification that starts your next round."`
}

// AskWhen asks for commands matching shell_ask_patterns, except those a deny
// pattern refuses anyway.
func (ShellRun) AskWhen(env Env, a shellArgs) string {
	cmd := a.Command
	if _, denied := firstMatch(env.Agent.ShellDenyPatterns, cmd, true); denied {
		return ""
	}
	if p, ok := firstMatch(env.Agent.ShellAskPatterns, cmd, true); ok {
		return fmt.Sprintf("the command matches shell_ask_patterns entry %q", p)
	}
	return ""
}

// AllowWhen makes denied commands routine, so their refusal reaches the model
// without asking anyone, and simple commands matching shell_allow_patterns.
func (ShellRun) AllowWhen(env Env, a shellArgs) bool {
	cmd := a.Command
	if _, denied := firstMatch(env.Agent.ShellDenyPatterns, cmd, true); denied {
		return true
	}
	if compound(cmd) {
		return false
	}
	_, ok := firstMatch(env.Agent.ShellAllowPatterns, cmd, false)
	return ok
}

// vetShell refuses what Run would refuse before starting anything: no
// command, a command a deny pattern refuses, a negative timeout.
func vetShell(env Env, a shellArgs) *Result {
	fail := func(format string, v ...any) *Result { res := Failf(format, v...); return &res }
	if strings.TrimSpace(a.Command) == "" {
		return fail("command is required")
	}
	if p, denied := firstMatch(env.Agent.ShellDenyPatterns, a.Command, true); denied {
		return fail("refused: the command matches shell_deny_patterns entry %q; it was not run", p)
	}
	if a.TimeoutSeconds < 0 {
		return fail("timeout_seconds must be positive")
	}
	return nil
}

// Check refuses, before anyone is asked, a call Run would refuse.
func (ShellRun) Check(env Env, a shellArgs) error {
	if res := vetShell(env, a); res != nil {
		return refusal(*res)
	}
	return nil
}

func (t ShellRun) Run(ctx context.Context, env Env, a shellArgs) (Result, error) {
	if res := vetShell(env, a); res != nil {
		return *res, nil
	}
	ws, err := workspaceRoot(env.Workspace)
	if err != nil {
		return Result{}, err
	}
	cmd := shell.Command{
		Script:  a.Command,
		Dir:     ws,
		Timeout: time.Duration(a.TimeoutSeconds) * time.Second,
		Env:     shell.Environ(os.Environ()),
		Sandbox: sandboxPolicy(env.Agent, ws),
	}
	if env.HomeDir != "" {
		var writable []string
		if cmd.Sandbox != nil {
			writable = cmd.Sandbox.WritePaths
		}
		cmd.View = shell.HomeView(env.HomeDir, env.AgentDir, writable...)
		cmd.View.Grant(ws) // a teammate's task folder may be another agent's (R-TEAM)
	}
	if a.RunInBackground {
		return startBackground(t.Background, env, cmd)
	}
	out, err := t.Sandbox.Run(ctx, cmd)
	if errors.Is(err, shell.ErrNoNetwork) {
		why := strings.TrimPrefix(err.Error(), shell.ErrNoNetwork.Error()+": ")
		return Failf("refused: every shell command runs in a network namespace of its own (its only way out is crew's proxy), but %s; the command was not run (crew doctor lists what this machine lacks)", why), nil
	}
	if errors.Is(err, shell.ErrNoSandbox) {
		return Failf("refused: this agent's shell must run sandboxed, but %v; the command was not run", err), nil
	}
	if errors.Is(err, shell.ErrNoIsolation) {
		return Failf("refused: shell commands run only isolated from the home, but %v; the command was not run (crew doctor lists what this machine lacks)", err), nil
	}
	if err != nil && ctx.Err() != nil {
		// Cut off (a stop, a shutdown): what it printed so far goes with
		// the error, for the harness to keep.
		return shellResult(out, cmd), err
	}
	if err != nil {
		return Failf("could not run the command: %v", err), nil
	}
	return shellResult(out, cmd), nil
}

// sandboxPolicy returns the sandbox an agent's commands run in, or nil.
func sandboxPolicy(p AgentPolicy, ws string) *shell.Policy {
	noNet := p.ShellNetwork != nil && !*p.ShellNetwork
	if !noNet && len(p.ShellWritePaths) == 0 {
		return nil
	}
	paths := []string{ws}
	for _, w := range p.ShellWritePaths {
		if !filepath.IsAbs(w) {
			w = filepath.Join(ws, w)
		}
		paths = append(paths, filepath.Clean(w))
	}
	return &shell.Policy{WritePaths: paths, Network: !noNet}
}

func shellResult(out shell.Output, cmd shell.Command) Result {
	var b strings.Builder
	b.WriteString(out.Text)
	if out.Text == "" {
		b.WriteString("(no output)")
	}
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	switch {
	case out.TimedOut:
		timeout := cmd.Timeout
		if timeout <= 0 {
			timeout = shell.DefaultTimeout
		}
		fmt.Fprintf(&b, "timed out after %s; the command and its child processes were killed", min(timeout, shell.MaxTimeout))
	case out.Signal != "":
		fmt.Fprintf(&b, "killed by signal: %s", out.Signal)
	default:
		fmt.Fprintf(&b, "exit code: %d", out.ExitCode)
	}
	for _, r := range out.Refused {
		fmt.Fprintf(&b, "\n(network: %s)", r)
	}
	if p := cmd.Sandbox; p != nil && (out.ExitCode != 0 || out.TimedOut) {
		b.WriteString("\n(sandboxed: writes only under the workspace")
		if len(p.WritePaths) > 1 {
			b.WriteString(", shell_write_paths")
		}
		b.WriteString(" and $TMPDIR")
		if !p.Network {
			b.WriteString("; no network")
		}
		b.WriteString(")")
	}
	return Result{Output: b.String(), IsError: out.TimedOut || out.ExitCode != 0}
}

// startBackground hands cmd to the server's runner and returns the
// placeholder result: the command's end arrives as a task notification.
func startBackground(bg Backgrounder, env Env, cmd shell.Command) (Result, error) {
	if bg == nil {
		return Failf("refused: background commands are not available here; run it without run_in_background"), nil
	}
	if cmd.Timeout <= 0 {
		cmd.Timeout = shell.MaxTimeout
	}
	id, err := bg.Start(env, cmd)
	if err != nil {
		return Failf("could not start the command in the background: %v", err), nil
	}
	return Result{Output: fmt.Sprintf("Started in the background as task %s (killed after %s, or when the server stops). "+
		"Its exit code and the head and tail of its output arrive as a task notification that starts your next round; "+
		"do not wait or poll for it.", id, min(cmd.Timeout, shell.MaxTimeout))}, nil
}
