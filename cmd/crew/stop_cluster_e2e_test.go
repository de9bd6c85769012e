package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// clusterModel starts a background command when told "start: <command>",
// then, on the command's placeholder, streams a few words and holds the
// reply open until the request is cancelled. It records which crew
// process (by its API key) holds the reply.
type clusterModel struct {
	mu        sync.Mutex
	requests  int
	holder    string
	cancelled int
}

func (m *clusterModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", 400)
		return
	}
	m.mu.Lock()
	m.requests++
	n := m.requests
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	last := req.Messages[len(req.Messages)-1]
	if cmd, ok := strings.CutPrefix(last.Content, "start: "); ok && last.Role == "user" {
		args, _ := json.Marshal(map[string]any{"command": cmd, "run_in_background": true})
		a, _ := json.Marshal(string(args))
		fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":"shell_run","arguments":%s}}]},"finish_reason":"tool_calls"}]}`+"\n\n", n, a)
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	w.Write([]byte(`data: {"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":"Watching the task; "}}]}` + "\n\n"))
	w.(http.Flusher).Flush()
	m.mu.Lock()
	m.holder = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	m.mu.Unlock()
	select {
	case <-r.Context().Done():
		m.mu.Lock()
		m.cancelled++
		m.mu.Unlock()
	case <-time.After(60 * time.Second):
	}
}

func (m *clusterModel) state() (requests int, holder string, cancelled int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests, m.holder, m.cancelled
}

// Issue 27 (cluster): two crew processes share a 3-node cluster; a run
// executed by one — its model reply held open, a background command it
// started running — is stopped through the other's POST
// /api/conversations/{id}/stop: the runner's model request is cancelled,
// the run ends stopped by api, the background command's process group on
// the runner is gone from the process table and its task is listed
// stopped, and the model is not called again.
func TestStopThroughAnotherClusterProcess(t *testing.T) {
	c := eventstest.StartCluster(t, 3)
	model := &clusterModel{}
	api := httptest.NewServer(model)
	defer api.Close()
	names := []string{"one", "two"}
	homes := make([]string, 2)
	servers := make([]*server, 2)
	for i, name := range names {
		homes[i] = filepath.Join(t.TempDir(), name)
		if _, _, code := crew(t, homes[i], "init"); code != 0 {
			t.Fatal("init failed")
		}
		setNATSURL(t, homes[i], c.URL())
		servers[i] = startServe(t, homes[i], "MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=key-"+name, "OPENROUTER_BASE_URL="+api.URL+"/v1")
	}
	cmd := "echo task-ready; trap 'echo task-got-term; exit 3' TERM; sleep 300 & wait"
	_, acc := postJSON(t, servers[0].url+"/api/inbound", map[string]any{"text": "start: " + cmd})
	conv := acc["conversation_id"].(string)
	approveUntil(t, servers[0].url, conv, "the run to hold its model reply", func(convView) bool {
		_, holder, _ := model.state()
		return holder != ""
	})
	_, holder, _ := model.state()
	runner := 0
	if holder == "key-two" {
		runner = 1
	}
	other := 1 - runner
	t.Logf("process %s runs the conversation; stopping through %s", names[runner], names[other])
	pgid := trackedGroup(t, homes[runner], nil)

	code, got := postStop(t, servers[other].url+"/api/conversations/"+conv+"/stop", nil)
	tasks, _ := got["tasks"].([]any)
	if code != http.StatusAccepted || got["run_id"] == "" || len(tasks) != 1 {
		t.Fatalf("stop through the other process = %d %v", code, got)
	}
	eventstest.Eventually(t, "the runner's model request cancelled", func() bool { _, _, n := model.state(); return n == 1 })
	eventstest.Eventually(t, "the runner's background command gone", func() bool { return syscall.Kill(-pgid, 0) == syscall.ESRCH })
	for _, s := range servers {
		cv := waitConv(t, s.url, conv, "stopped", func(c convView) bool { return c.Status == "stopped" })
		var run stoppedRun
		getJSON(t, s.url+"/api/runs/"+cv.LastRunID, &run)
		if run.Status != "stopped" || run.StoppedBy != "api" || run.StopRequested == nil || run.Finished == nil {
			t.Fatalf("run on %s = %+v", s.url, run)
		}
		t.Logf("stop took effect %s after it was stored", run.Finished.Sub(*run.StopRequested))
	}
	eventstest.Eventually(t, "the task listed stopped", func() bool {
		list := tasksOf(t, servers[other].url, conv)
		return len(list) == 1 && list[0].State == "stopped" && list[0].StoppedBy == "api"
	})
	time.Sleep(500 * time.Millisecond) // a further model call would come now; bounded
	if n, _, _ := model.state(); n != 2 {
		t.Fatalf("the model was asked %d times, want 2", n)
	}
	for _, s := range servers {
		s.stop(t)
	}
}
