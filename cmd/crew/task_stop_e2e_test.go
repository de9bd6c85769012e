package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/my-agent-crew/crew/events/eventstest"
)

type taskView struct {
	ID         string `json:"id"`
	Command    string `json:"command"`
	Started    string `json:"started"`
	State      string `json:"state"`
	ExitCode   *int   `json:"exit_code"`
	Failure    string `json:"failure"`
	StoppedBy  string `json:"stopped_by"`
	OutputTail string `json:"output_tail"`
}

// tasksOf is GET /api/conversations/{id}/tasks.
func tasksOf(t *testing.T, url, conv string) []taskView {
	t.Helper()
	var out struct {
		Tasks []taskView `json:"tasks"`
	}
	if code := getJSON(t, url+"/api/conversations/"+conv+"/tasks", &out); code != http.StatusOK {
		t.Fatalf("GET tasks = %d", code)
	}
	return out.Tasks
}

// postWith posts body with the given Content-Type and extra headers.
func postWith(t *testing.T, url, contentType string, header map[string]string, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", contentType)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// trackedGroup waits for a live command recorded in the home's shell
// folder other than those in skip (call it once the task runs), and
// returns its process group.
func trackedGroup(t *testing.T, home string, skip map[int]bool) int {
	t.Helper()
	var pid int
	eventstest.Eventually(t, "the background command to be tracked", func() bool {
		es, _ := os.ReadDir(filepath.Join(home, "data", "shell"))
		for _, e := range es {
			if p, ok := strings.CutSuffix(e.Name(), ".json"); ok {
				if n, _ := strconv.Atoi(p); n > 1 && !skip[n] && syscall.Kill(-n, 0) == nil {
					pid = n
				}
			}
		}
		return pid > 1
	})
	return pid
}

// Issue 27 item 4 through crew serve: GET /api/conversations/{id}/tasks
// lists a running background task (id, command, started, state, live
// output tail); POST /api/tasks/{id}/stop is refused cross-site (403) and
// without JSON (415), 404 for an unknown task, 202 for the task — its
// process group gone from the process table, the list then says stopped by
// api, no round opened — and 409 already_finished once it ended. A stop of
// the conversation kills the next background task too (202 naming it).
func TestStopBackgroundTaskOverHTTP(t *testing.T) {
	model := &bgModel{}
	api := httptest.NewServer(model)
	defer api.Close()
	home := initHome(t)
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key-bg", "OPENROUTER_BASE_URL="+api.URL+"/v1")
	// The trap is set before task-ready is printed: a stop sent once the
	// list shows task-ready finds the shell trapping TERM (printed first, a
	// stop could beat the trap and end the shell on SIGTERM's default).
	cmd := "trap 'echo task-got-term; exit 3' TERM; echo task-ready; sleep 300 & wait"
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "start: " + cmd})
	conv := acc["conversation_id"].(string)
	approveUntil(t, s.url, conv, "to end its turn on the placeholder", settled)
	var task taskView
	eventstest.Eventually(t, "the task listed with its output", func() bool {
		list := tasksOf(t, s.url, conv)
		if len(list) == 1 {
			task = list[0]
		}
		return len(list) == 1 && strings.Contains(list[0].OutputTail, "task-ready")
	})
	pgid := trackedGroup(t, home, nil)
	if task.State != "running" || task.Command != cmd || task.Started == "" || !strings.HasPrefix(task.ID, "bg-") {
		t.Fatalf("task = %+v", task)
	}
	stop := s.url + "/api/tasks/" + task.ID + "/stop"
	if code, body := postWith(t, stop, "application/json", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, ""); code != http.StatusForbidden {
		t.Fatalf("cross-site stop = %d %v, want 403", code, body)
	}
	if code, body := postWith(t, stop, "text/plain", nil, ""); code != http.StatusUnsupportedMediaType {
		t.Fatalf("stop without JSON = %d %v, want 415", code, body)
	}
	if err := syscall.Kill(-pgid, 0); err != nil {
		es, _ := os.ReadDir(filepath.Join(home, "data", "shell"))
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		t.Fatalf("the refused stops killed the task %d: %v (tracked %v; tasks %+v)", pgid, err, names, tasksOf(t, s.url, conv))
	}
	if code, body := postStop(t, s.url+"/api/tasks/bg-unknown/stop", nil); code != http.StatusNotFound || errCode(body) != "not_found" {
		t.Fatalf("unknown task = %d %v", code, body)
	}
	code, got := postStop(t, stop, nil)
	if code != http.StatusAccepted || got["id"] != task.ID || got["stopped_by"] != "api" {
		t.Fatalf("stop = %d %v", code, got)
	}
	eventstest.Eventually(t, "the task's process group gone", func() bool { return syscall.Kill(-pgid, 0) == syscall.ESRCH })
	eventstest.Eventually(t, "the task listed stopped", func() bool {
		list := tasksOf(t, s.url, conv)
		return len(list) == 1 && list[0].State == "stopped"
	})
	task = tasksOf(t, s.url, conv)[0]
	if task.StoppedBy != "api" || task.ExitCode == nil || *task.ExitCode != -1 || !strings.Contains(task.OutputTail, "task-got-term") ||
		!strings.Contains(task.Failure, "stopped by the owner (api) (it exited 3 on SIGTERM)") {
		code := "none"
		if task.ExitCode != nil {
			code = strconv.Itoa(*task.ExitCode)
		}
		t.Fatalf("stopped task = %+v (exit code %s)", task, code)
	}
	if code, body := postStop(t, stop, nil); code != http.StatusConflict || errCode(body) != "already_finished" {
		t.Fatalf("second stop = %d %v, want 409 already_finished", code, body)
	}
	var runs []map[string]any
	getJSON(t, s.url+"/api/conversations/"+conv+"/runs", &runs)
	if len(runs) != 1 {
		t.Fatalf("%d runs: the stopped task's notification opened a round", len(runs))
	}

	// A stop of the conversation kills its background tasks.
	postJSON(t, s.url+"/api/inbound", map[string]any{"text": "start: " + cmd, "conversation_id": conv})
	approveUntil(t, s.url, conv, "to start the second task", func(c convView) bool {
		list := tasksOf(t, s.url, conv)
		return settled(c) && len(list) == 2 && strings.Contains(list[1].OutputTail, "task-ready")
	})
	second := trackedGroup(t, home, map[int]bool{pgid: true})
	code, got = postStop(t, s.url+"/api/conversations/"+conv+"/stop", nil)
	tasks, _ := got["tasks"].([]any)
	if code != http.StatusAccepted || len(tasks) != 1 {
		t.Fatalf("conversation stop = %d %v, want 202 naming the task", code, got)
	}
	eventstest.Eventually(t, "the second task's process group gone", func() bool { return syscall.Kill(-second, 0) == syscall.ESRCH })
	eventstest.Eventually(t, "the second task listed stopped", func() bool {
		list := tasksOf(t, s.url, conv)
		return len(list) == 2 && list[1].State == "stopped" && list[1].StoppedBy == "api"
	})
	s.stop(t)
}
