package events_test

import "github.com/my-agent-crew/crew/events"

// Samples of a background command's end, as loop.Background stores them.
func init() {
	samples[events.TypeTaskNotification] = []events.Event{
		&events.TaskNotification{TaskID: "bg-1a2b", CallID: "call_1", FromRun: "r1", Command: "make test", ExitCode: 0, Output: "ok\n"},
		&events.TaskNotification{TaskID: "bg-1a2c", Command: "go build ./...", ExitCode: 2, Output: "head\n[… 10 bytes of output dropped …]\ntail\n", Dropped: 10},
		&events.TaskNotification{TaskID: "bg-1a2d", Command: "sleep 900", ExitCode: -1, TimedOut: true, Output: ""},
		&events.TaskNotification{TaskID: "bg-1a2e", Command: "serve", ExitCode: -1, Signal: "killed", Failure: "killed: the server stopped", Output: "listening\n"},
	}
	samples[events.TypeRunStarted] = append(samples[events.TypeRunStarted], &events.RunStarted{RunID: "r2", Agent: "master", Trigger: "task_notification"})
}
