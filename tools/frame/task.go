package frame

import (
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools/fence"
)

// The harness's frame around a background command's end (R-TEAM §8): the
// model reads the notification as the harness's report, never as the
// owner's words; the command's output inside is neutralised by Unframe.
const (
	TaskFrame    = "[Background task — reported by the harness, not the owner's words]"
	EndTaskFrame = "[End of background task]"
)

const taskFrameLike = `background[\s\p{Cf}]+task|end[\s\p{Cf}]+of[\s\p{Cf}]+background[\s\p{Cf}]+task`

// TaskText is what the model reads for a task notification: the harness's
// frame, and inside it what the command wrote (its command line, a failure
// and its output) sealed in a nonce fence (R-SEC-1) the output cannot
// close, neutralised by Unframe besides.
func TaskText(n *events.TaskNotification) string {
	var b strings.Builder
	b.WriteString(TaskFrame + "\n")
	fmt.Fprintf(&b, "Task %s (shell_run in the background): ", fence.Link(n.TaskID))
	switch {
	case n.Failure != "":
		b.WriteString("failed (below).\n")
	case n.TimedOut:
		b.WriteString("Timed out; the command and its child processes were killed.\n")
	case n.Signal != "":
		fmt.Fprintf(&b, "Killed by signal: %s\n", fence.Link(n.Signal))
	default:
		fmt.Fprintf(&b, "Exit code: %d\n", n.ExitCode)
	}
	var in strings.Builder
	fmt.Fprintf(&in, "Command: %s\n", indent(Unframe(n.Command)))
	if n.Failure != "" {
		fmt.Fprintf(&in, "Failed: %s\n", Unframe(n.Failure))
	}
	out := n.Output
	if out == "" {
		out = "(no output)"
	}
	in.WriteString("Output (head and tail):\n" + Unframe(strings.TrimRight(out, "\n")) + "\n")
	b.WriteString(fence.Seal("background task "+n.TaskID, in.String()) + "\n")
	b.WriteString(EndTaskFrame)
	return b.String()
}
