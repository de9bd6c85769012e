package scheduler

import (
	"context"
	"fmt"
	"os"

	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools/shell"
)

// ShellScripts is Config.RunScript for a crew: it runs a script job's
// command as its agent, in its workspace, sandboxed by its shell settings
// like shell_run, seeing of the home at homeDir what shell_run sees, in box.
func ShellScripts(homeDir string, crew loop.Crew, box *shell.Sandbox) func(ctx context.Context, agent, command string) (string, error) {
	return func(ctx context.Context, agentID, command string) (string, error) {
		a, ok := crew.Agent(agentID)
		if !ok {
			return "", fmt.Errorf("agent %q is not loaded", agentID)
		}
		cmd := shell.Command{Script: command, Dir: a.Workspace, Env: shell.Environ(os.Environ())}
		if p := a.Policy; (p.ShellNetwork != nil && !*p.ShellNetwork) || len(p.ShellWritePaths) > 0 {
			cmd.Sandbox = &shell.Policy{WritePaths: append([]string{a.Workspace}, p.ShellWritePaths...), Network: p.ShellNetwork == nil || *p.ShellNetwork}
		}
		cmd.View = shell.HomeView(homeDir, a.Dir, append([]string{a.Workspace}, a.Policy.ShellWritePaths...)...)
		out, err := box.Run(ctx, cmd)
		if err != nil {
			return "", err
		}
		if out.ExitCode != 0 || out.TimedOut {
			return out.Text, fmt.Errorf("script exited with %d (timed out: %v)", out.ExitCode, out.TimedOut)
		}
		return out.Text, nil
	}
}
