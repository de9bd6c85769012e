package events

// TypeTaskNotification is a background command's end (R-TEAM, seed 004):
// a shell_run started with run_in_background finished, failed or was
// killed. Stored on the conversation that started it, it waits like a
// message and opens the next round; the model reads it framed as the
// harness's words.
const TypeTaskNotification = "task_notification"

func init() { register[TaskNotification]() }

// TaskNotification is how one background command ended. Output is the head
// and the tail of what it printed (Dropped bytes cut from the middle);
// ExitCode is -1 when it was killed by a signal or did not run (Failure
// says why).
type TaskNotification struct {
	TaskID   string `json:"task_id"`
	CallID   string `json:"call_id,omitempty"`
	FromRun  string `json:"from_run,omitempty"` // the run whose call started it (not a run this event belongs to)
	Command  string `json:"command"`
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Failure  string `json:"failure,omitempty"`
	Output   string `json:"output"`
	Dropped  int64  `json:"dropped,omitempty"`
	// StoppedBy: the owner stopped the task (task_stop, a stop of its
	// conversation); the notification is told, it opens no round.
	StoppedBy string `json:"stopped_by,omitempty"`
}

func (*TaskNotification) EventType() string { return TypeTaskNotification }
func (*TaskNotification) EventVersion() int { return 1 }
