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

// TypeTaskStarted is a background command started (shell_run with
// run_in_background): stored before the command runs, so the
// conversation's task list (GET /api/conversations/{id}/tasks) and a stop
// of it are decided from the log on any process of a cluster.
const TypeTaskStarted = "task_started"

// TypeTaskStopRequested is a stop of one background task (POST
// /api/tasks/{id}/stop, the model's task_stop): stored before it takes
// effect; the process running the task kills its process group (SIGTERM,
// SIGKILL after 3 s) and its task_notification says who stopped it.
const TypeTaskStopRequested = "task_stop_requested"

// StopByModel: the model stopped its own background task (task_stop).
const StopByModel = "model"

func init() {
	register[TaskStarted]()
	register[TaskStopRequested]()
}

// TaskStarted is one background command started by the call CallID of run
// FromRun.
type TaskStarted struct {
	TaskID  string `json:"task_id"`
	CallID  string `json:"call_id,omitempty"`
	FromRun string `json:"from_run,omitempty"` // the run whose call started it
	Command string `json:"command"`
	// Holder, on a cluster, is the crew process that runs it (its life
	// lease's name): only that process's death ends it from outside.
	Holder string `json:"holder,omitempty"`
}

func (*TaskStarted) EventType() string { return TypeTaskStarted }
func (*TaskStarted) EventVersion() int { return 1 }

// TaskStopRequested asks for the background task TaskID to be killed.
type TaskStopRequested struct {
	TaskID string `json:"task_id"`
	By     string `json:"by"` // web, api, telegram, cli, model
}

func (*TaskStopRequested) EventType() string { return TypeTaskStopRequested }
func (*TaskStopRequested) EventVersion() int { return 1 }
