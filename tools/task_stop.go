package tools

import (
	"context"
	_ "embed"
	"strings"
)

//go:embed task_stop.md
var taskStopDescription string

// TaskStop is task_stop(task_id): the model stops one of its own
// conversation's background commands (issue 27). A task of another
// conversation is refused. Background holds the tasks (nil: none).
type TaskStop struct {
	Background Backgrounder
}

func (TaskStop) Def() Def {
	return Def{Name: "task_stop", Description: taskStopDescription, Default: true}
}

type taskStopArgs struct {
	TaskID string `json:"task_id" jsonschema:"The id shell_run gave the background task (bg-…)."`
}

func (t TaskStop) Run(ctx context.Context, env Env, a taskStopArgs) (Result, error) {
	if strings.TrimSpace(a.TaskID) == "" {
		return Failf("task_stop: task_id is empty"), nil
	}
	if t.Background == nil {
		return Failf("refused: there are no background tasks here"), nil
	}
	return t.Background.Stop(ctx, env, a.TaskID)
}
