package events_test

import "github.com/my-agent-crew/crew/events"

// Samples of a stop and what it settles, as loop.Worker.Stop and the
// stopped run's close store them.
func init() {
	samples[events.TypeRunStopRequested] = []events.Event{
		&events.RunStopRequested{RunID: "r1", By: events.StopByWeb, Scope: events.StopAll, Dropped: []string{"e7", "e8"}},
		&events.RunStopRequested{RunID: "r1", By: events.StopByTelegram, Scope: events.StopRun},
		&events.RunStopRequested{By: events.StopByAPI, Scope: events.StopQueue, Dropped: []string{"e9"}},
	}
	samples[events.TypeRunFinished] = append(samples[events.TypeRunFinished],
		&events.RunFinished{RunID: "r1", Status: events.RunStopped, Reason: events.StoppedByOwner, By: events.StopByCLI})
	samples[events.TypeModelCalled] = append(samples[events.TypeModelCalled],
		&events.ModelCalled{RunID: "r1", Step: 2, Route: "openrouter:x/y", Model: "x/y", Text: "Half a sent", Error: "stopped by the owner", Stopped: true})
	samples[events.TypeQuestionExpired] = append(samples[events.TypeQuestionExpired], &events.QuestionExpired{QuestionID: "q1", Withdrawn: true})
	samples[events.TypeApprovalDecided] = append(samples[events.TypeApprovalDecided],
		&events.ApprovalDecided{ApprovalID: "a1", Decision: events.DecisionWithdrawn, Channel: events.StopByWeb})
	samples[events.TypeTaskNotification] = append(samples[events.TypeTaskNotification],
		&events.TaskNotification{TaskID: "bg-1a2f", Command: "sleep 600", ExitCode: -1, Signal: "terminated", Failure: "killed: stopped by the owner", Output: "", StoppedBy: events.StopByAPI})
	samples[events.TypeToolCompleted] = append(samples[events.TypeToolCompleted],
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "c1", Tool: "shell_run", Output: "partial\n[Stopped by the owner]", IsError: true, Outcome: "stopped", DurationMS: 1200})
}

// Samples of a background task's start and stop (task_stop, POST
// /api/tasks/{id}/stop, a stop of its conversation).
func init() {
	samples[events.TypeTaskStarted] = []events.Event{
		&events.TaskStarted{TaskID: "bg-1a2f", CallID: "call_1", FromRun: "r1", Command: "sleep 600"},
	}
	samples[events.TypeTaskStopRequested] = []events.Event{
		&events.TaskStopRequested{TaskID: "bg-1a2f", By: events.StopByAPI},
		&events.TaskStopRequested{TaskID: "bg-1a2f", By: events.StopByModel},
	}
	samples[events.TypeRunStopRequested] = append(samples[events.TypeRunStopRequested],
		&events.RunStopRequested{RunID: "r1", By: events.StopByWeb, Scope: events.StopRun, Tasks: []string{"bg-1a2f"}})
	samples[events.TypeNestedCall] = append(samples[events.TypeNestedCall],
		&events.NestedCall{RunID: "r1", Step: 1, CallID: "c1", N: 2, Kind: "tool", Tool: "shell_run", IsError: true, Outcome: "stopped", Chars: 90})
}
