package tools

import (
	"context"
	_ "embed"
	"encoding/json"
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
	return Def{Name: "task_stop", Description: taskStopDescription, Default: true, Params: params(`{
  "type": "object",
  "properties": {
    "task_id": {"type": "string", "description": "The id shell_run gave the background task (bg-…)."}
  },
  "required": ["task_id"],
  "additionalProperties": false
}`)}
}

func (t TaskStop) Run(ctx context.Context, env Env, args json.RawMessage) (Result, error) {
	var a struct {
		TaskID string `json:"task_id"`
	}
	if msg, ok := DecodeArgs("task_stop", args, &a); !ok {
		return Failf("%s", msg), nil
	}
	if strings.TrimSpace(a.TaskID) == "" {
		return Failf("task_stop: task_id is empty"), nil
	}
	if t.Background == nil {
		return Failf("refused: there are no background tasks here"), nil
	}
	return t.Background.Stop(ctx, env, a.TaskID)
}
