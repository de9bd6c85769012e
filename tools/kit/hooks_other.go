//go:build !linux

package kit

import (
	"context"

	"github.com/my-agent-crew/crew/tools/shell"
)

// runHook does not run hooks off Linux, where the harness's shell commands
// do not run either.
func runHook(ctx context.Context, box *shell.Sandbox, hk hook, stdin []byte, dir string, env []string, view *shell.View) (Outcome, string) {
	return Outcome{Command: hk.command, ExitCode: -1, Output: "the hook did not run: hooks only run on Linux"}, ""
}
