package web

import (
	"context"
	"net/http"

	"github.com/my-agent-crew/crew/events/view"
)

// TaskStopper lists and stops background tasks (inbound.Stops).
type TaskStopper interface {
	Tasks(ctx context.Context, conversation string) ([]view.Task, error)
	StopTask(ctx context.Context, id, by string) (view.Task, error)
}

// routeTasks serves GET /api/conversations/{id}/tasks (the conversation's
// background tasks, oldest first) and POST /api/tasks/{id}/stop (202 with
// the task, 404 unknown, 409 already_finished; by "api", or "cli").
func (s *server) routeTasks(mux *router) {
	ts := s.cfg.Tasks
	if ts == nil {
		return
	}
	mux.HandleFunc("GET /api/conversations/{id}/tasks", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		list, err := ts.Tasks(r.Context(), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"conversation_id": id, "tasks": list})
	})
	mux.HandleFunc("POST /api/tasks/{id}/stop", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		var req stopRequest
		if !decodeOptionalBody(w, r, &req) {
			return
		}
		by, ok := apiBy(w, req)
		if !ok {
			return
		}
		if req.Scope != "" {
			writeError(w, http.StatusBadRequest, "bad_request", `a task's stop takes no "scope"`)
			return
		}
		got, err := ts.StopTask(r.Context(), id, by)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusAccepted, got)
	})
}
