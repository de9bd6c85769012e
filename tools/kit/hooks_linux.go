package kit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/my-agent-crew/crew/tools/shell"
)

// captureBytes bounds what is kept of a hook's stderr before it is cut to
// maxHookOutput characters, so a chatty hook cannot exhaust memory.
const captureBytes = 64 << 10

// runHook runs one hook command like a shell_run command (tools/shell: its
// own mount and PID namespaces, the home hidden as view says, everything it
// started killed when it ends, times out or ctx ends, and when the server
// dies) and reports how it ended, and its stderr.
func runHook(ctx context.Context, box *shell.Sandbox, hk hook, stdin []byte, dir string, env []string, view *shell.View) (Outcome, string) {
	start := time.Now()
	o := Outcome{Command: hk.command}
	var stderr capped
	out, err := box.Run(ctx, shell.Command{
		Script: hk.command, Dir: dir, Timeout: hk.timeout, Env: env,
		Stdin: bytes.NewReader(stdin), Stderr: &stderr, View: view,
	})
	o.Duration = time.Since(start)
	cancelled := ctx.Err()
	if err != nil && cancelled == nil {
		o.ExitCode = -1
		o.Output = fmt.Sprintf("the hook could not start: %v", err)
		if errors.Is(err, shell.ErrNoIsolation) {
			// The owner's guard cannot run as it must: what it could
			// block does not go on (Run blocks on a Reason with exit -1).
			o.Reason = fmt.Sprintf("the hook %q could not run isolated (in namespaces of its own): %v", hk.command, err)
		}
		return o, ""
	}
	o.ExitCode, o.TimedOut = out.ExitCode, out.TimedOut
	o.Output = cutOutput(out.Text)
	switch {
	case out.TimedOut:
		o.ExitCode = -1
		o.Output += fmt.Sprintf("\n[killed: the hook ran past its timeout of %v]", hk.timeout)
	case cancelled != nil:
		o.ExitCode = -1
		o.Output += fmt.Sprintf("\n[killed: %v]", cancelled)
	}
	return o, stderr.String()
}

// capped keeps the first captureBytes written to it and drops the rest.
type capped struct {
	buf     bytes.Buffer
	dropped bool
}

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	if room := captureBytes - c.buf.Len(); room < len(p) {
		c.dropped = true
		p = p[:max(room, 0)]
	}
	c.buf.Write(p)
	return n, nil
}

func (c *capped) String() string {
	if c.dropped {
		return c.buf.String() + "\n[… more output dropped]"
	}
	return c.buf.String()
}
