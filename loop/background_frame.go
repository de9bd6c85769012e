package loop

import (
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/events"
)

// The harness's frame around a background command's end (R-TEAM §8): the
// model reads the notification as the harness's report, never as the
// owner's words; the command's output inside is neutralised by Unframe.
const (
	TaskFrame    = "[Background task — reported by the harness, not the owner's words]"
	EndTaskFrame = "[End of background task]"
)

const taskFrameLike = `background[\s\p{Cf}]+task|end[\s\p{Cf}]+of[\s\p{Cf}]+background[\s\p{Cf}]+task`

// TaskText is what the model reads for a task notification.
func TaskText(n *events.TaskNotification) string {
	var b strings.Builder
	b.WriteString(TaskFrame + "\n")
	fmt.Fprintf(&b, "Task %s (shell_run in the background): %s\n", n.TaskID, indent(Unframe(n.Command)))
	switch {
	case n.Failure != "":
		fmt.Fprintf(&b, "Failed: %s\n", Unframe(n.Failure))
	case n.TimedOut:
		b.WriteString("Timed out; the command and its child processes were killed.\n")
	case n.Signal != "":
		fmt.Fprintf(&b, "Killed by signal: %s\n", n.Signal)
	default:
		fmt.Fprintf(&b, "Exit code: %d\n", n.ExitCode)
	}
	out := n.Output
	if out == "" {
		out = "(no output)"
	}
	b.WriteString("Output (head and tail):\n" + Unframe(strings.TrimRight(out, "\n")) + "\n")
	b.WriteString(EndTaskFrame)
	return b.String()
}
