package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
)

// A background task whose server is killed (kill -9) while it runs is
// ended at the next start: the new server's shell tracker kills its
// process group, and its end is stored before any turn runs. The list
// shows it failed (LeftFailure, exit -1), its conversation is told (a
// task_notification round whose request carries the failure), and a stop
// of it answers at once that it finished (409), not "stopping" for good.
func TestBackgroundTaskEndedAfterCrash(t *testing.T) {
	model := &bgModel{}
	api := httptest.NewServer(model)
	defer api.Close()
	home := initHome(t)
	env := []string{"MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key-bg", "OPENROUTER_BASE_URL=" + api.URL + "/v1"}
	s := startServe(t, home, env...)
	cmd := "echo task-ready; sleep 300"
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "start: " + cmd})
	conv := acc["conversation_id"].(string)
	approveUntil(t, s.url, conv, "to end its turn on the placeholder", settled)
	var task taskView
	eventstest.Eventually(t, "the task listed running with its output", func() bool {
		list := tasksOf(t, s.url, conv)
		if len(list) == 1 {
			task = list[0]
		}
		return len(list) == 1 && list[0].State == "running" && strings.Contains(list[0].OutputTail, "task-ready")
	})
	pgid := trackedGroup(t, home, nil)
	s.kill9(t)
	if err := syscall.Kill(-pgid, 0); err != nil {
		t.Fatalf("control: the task's process group %d died with its server: %v", pgid, err)
	}

	s = startServe(t, home, env...)
	defer s.stop(t)
	eventstest.Eventually(t, "the task's process group killed by the next start", func() bool { return syscall.Kill(-pgid, 0) == syscall.ESRCH })
	list := tasksOf(t, s.url, conv)
	if len(list) != 1 || list[0].ID != task.ID || list[0].State != "failed" || list[0].Failure != loop.LeftFailure ||
		list[0].ExitCode == nil || *list[0].ExitCode != -1 {
		t.Fatalf("after the crash and a start, the task list = %+v, want %s failed with %q, exit -1", list, task.ID, loop.LeftFailure)
	}
	began := time.Now()
	if code, body := postStop(t, s.url+"/api/tasks/"+task.ID+"/stop", nil); code != http.StatusConflict || errCode(body) != "already_finished" {
		t.Fatalf("stop of the ended task = %d %v, want 409 already_finished", code, body)
	}
	t.Logf("the stop answered in %s", time.Since(began))
	// Told as any other end: a round on the notification.
	waitRuns(t, s.url, conv, "to hold the notification's finished run", func(runs []runSummary) bool {
		return len(runs) == 2 && runs[0].Status != "running" && runs[1].Status != "running"
	})
	reqs := model.requests()
	last := reqs[len(reqs)-1].Messages[len(reqs[len(reqs)-1].Messages)-1]
	if !strings.HasPrefix(last.Content, "[Background task") || !strings.Contains(last.Content, loop.LeftFailure) {
		t.Errorf("the notification's round does not carry the crash's end:\n%s", last.Content)
	}
}
