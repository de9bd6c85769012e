package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// hangingModel is an OpenAI-compatible endpoint that streams a few words
// and then holds the reply open until the request is cancelled: a run to
// stop while it streams.
type hangingModel struct {
	requests  atomic.Int32
	cancelled atomic.Int32
	// delay holds the first words back (a page that is still loading
	// would miss them live).
	delay time.Duration
}

func (m *hangingModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.requests.Add(1)
	w.Header().Set("Content-Type", "text/event-stream")
	w.(http.Flusher).Flush()
	select {
	case <-time.After(m.delay):
	case <-r.Context().Done():
		m.cancelled.Add(1)
		return
	}
	w.Write([]byte(`data: {"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":"Half a sentence about a lighthouse keeper who counted the waves every night, one by one, until the sea itself began to count back; "}}]}` + "\n\n"))
	w.Write([]byte(`data: {"id":"x","choices":[{"index":0,"delta":{"content":"and then"}}]}` + "\n\n"))
	w.(http.Flusher).Flush()
	select {
	case <-r.Context().Done():
		m.cancelled.Add(1)
	case <-time.After(60 * time.Second):
	}
}

func (m *hangingModel) env(t *testing.T) []string {
	api := httptest.NewServer(m)
	t.Cleanup(api.Close)
	return []string{"MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL=" + api.URL + "/v1"}
}

// postStop posts a stop with a JSON body (nil: none).
func postStop(t *testing.T, url string, body any) (int, map[string]any) {
	t.Helper()
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

type stoppedRun struct {
	Status        string     `json:"status"`
	Reason        string     `json:"reason"`
	StoppedBy     string     `json:"stopped_by"`
	StopRequested *time.Time `json:"stop_requested"`
	Finished      *time.Time `json:"finished"`
	Resumed       int        `json:"resumed"`
	Totals        struct {
		ModelCalls int `json:"model_calls"`
	} `json:"totals"`
}

// Issue 27 items 1, 2, 4 and 6 through crew serve: POST
// /api/conversations/{id}/stop stops a run while the model streams (the
// request is cancelled), 202 {run_id, dropped}; the run ends stopped by
// api, the streamed words stay in the history marked stopped, the runs
// view says who and when; a second stop is 409 nothing_running; an unknown
// conversation 404, a bad scope 400.
func TestStopOverHTTP(t *testing.T) {
	home := initHome(t)
	model := &hangingModel{}
	s := startServe(t, home, model.env(t)...)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "write me a long story"})
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "running", func(c convView) bool { return c.Status == "running" && model.requests.Load() == 1 })
	time.Sleep(300 * time.Millisecond) // the words reach the server's stream; bounded

	code, got := postStop(t, s.url+"/api/conversations/"+id+"/stop", nil)
	if code != http.StatusAccepted || got["run_id"] != c.LastRunID || got["dropped"] != 0.0 {
		t.Fatalf("stop = %d %v, want 202 with run %s", code, got, c.LastRunID)
	}
	c = waitConv(t, s.url, id, "stopped", func(c convView) bool { return c.Status == "stopped" })
	last := c.History[len(c.History)-1]
	if last.Role != "assistant" || !strings.HasPrefix(last.Text, "Half a sentence") {
		t.Fatalf("last history entry = %+v, want the streamed words", last)
	}
	var raw struct {
		History []map[string]any `json:"history"`
	}
	getJSON(t, s.url+"/api/conversations/"+id, &raw)
	if raw.History[len(raw.History)-1]["stopped"] != true {
		t.Fatalf("the partial reply is not marked stopped: %v", raw.History[len(raw.History)-1])
	}
	var run stoppedRun
	getJSON(t, s.url+"/api/runs/"+c.LastRunID, &run)
	if run.Status != "stopped" || run.Reason != "stopped_by_owner" || run.StoppedBy != "api" || run.StopRequested == nil || run.Finished == nil || run.Totals.ModelCalls != 1 {
		t.Fatalf("run = %+v", run)
	}
	t.Logf("stop took effect %s after it was stored", run.Finished.Sub(*run.StopRequested))
	eventstest.Eventually(t, "the model's request cancelled", func() bool { return model.cancelled.Load() == 1 })

	if code, body := postStop(t, s.url+"/api/conversations/"+id+"/stop", map[string]any{"scope": "all"}); code != http.StatusConflict || errCode(body) != "nothing_running" {
		t.Fatalf("second stop = %d %v, want 409 nothing_running", code, body)
	}
	if code, body := postStop(t, s.url+"/api/conversations/nope/stop", nil); code != http.StatusNotFound {
		t.Fatalf("unknown conversation = %d %v", code, body)
	}
	if code, body := postStop(t, s.url+"/api/conversations/"+id+"/stop", map[string]any{"scope": "everything"}); code != http.StatusBadRequest || errCode(body) != "bad_scope" {
		t.Fatalf("bad scope = %d %v", code, body)
	}
	if code, body := postStop(t, s.url+"/api/stop", nil); code != http.StatusConflict || errCode(body) != "nothing_running" {
		t.Fatalf("stop all with nothing running = %d %v", code, body)
	}
	if n := model.requests.Load(); n != 1 {
		t.Fatalf("the model was asked %d times", n)
	}
	// The audit trail of the stopped run (issue 27 item 6): crew export,
	// from the running server and from the stopped home, carries the stop
	// (who, which run) and the stopped end, and crew verify passes it.
	dir := t.TempDir()
	running, stoppedFile := filepath.Join(dir, "running.jsonl"), filepath.Join(dir, "stopped.jsonl")
	if _, errOut, code := crew(t, home, "export", id, "-o", running); code != 0 {
		t.Fatalf("export while running: %s", errOut)
	}
	s.stop(t)
	if _, errOut, code := crew(t, home, "export", id, "-o", stoppedFile); code != 0 {
		t.Fatalf("export while stopped: %s", errOut)
	}
	a, _ := os.ReadFile(running)
	b, _ := os.ReadFile(stoppedFile)
	if !bytes.Equal(a, b) {
		t.Errorf("exports differ between the running server and the stopped home")
	}
	var asked, ended bool
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var l struct {
			Type string `json:"type"`
			Data struct {
				RunID  string `json:"run_id"`
				By     string `json:"by"`
				Status string `json:"status"`
				Reason string `json:"reason"`
			} `json:"data"`
		}
		json.Unmarshal(line, &l)
		switch {
		case l.Type == "run_stop_requested" && l.Data.RunID == c.LastRunID && l.Data.By == "api":
			asked = true
		case l.Type == "run_finished" && l.Data.RunID == c.LastRunID && l.Data.Status == "stopped" && l.Data.Reason == "stopped_by_owner" && l.Data.By == "api":
			ended = asked
		}
	}
	if !asked || !ended {
		t.Fatalf("the export lacks the stop (%v) or the stopped end after it (%v):\n%s", asked, ended, b)
	}
	if out, errOut, code := crew(t, home, "verify", stoppedFile); code != 0 || !strings.Contains(out, "ok: ") {
		t.Fatalf("verify the stopped run's export: code %d, %q %q", code, out, errOut)
	}
}

// Issue 27 item 3: SIGKILL right after run_stop_requested is stored (the
// crash-injection build); after restart the run is stopped, not resumed,
// and the model is not asked again.
func TestStopKill9AfterStopStored(t *testing.T) {
	home := initHome(t)
	model := &hangingModel{}
	env := model.env(t)
	s := startServe(t, home, append(env, "CREW_TEST_CRASH_AFTER_TYPE=run_stop_requested")...)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "write me a long story"})
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "running", func(c convView) bool { return c.Status == "running" && model.requests.Load() == 1 })
	if resp, err := http.Post(s.url+"/api/conversations/"+id+"/stop", "application/json", nil); err == nil {
		resp.Body.Close() // the process dies as the stop is stored: no answer, most likely
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatal("crew serve did not die after storing the stop")
	}

	s = startServe(t, home, env...)
	c = waitConv(t, s.url, id, "stopped", func(c convView) bool { return c.Status == "stopped" })
	var run stoppedRun
	getJSON(t, s.url+"/api/runs/"+c.LastRunID, &run)
	if run.Status != "stopped" || run.StoppedBy != "api" || run.Resumed != 0 {
		t.Fatalf("run after restart = %+v, want stopped by api, not resumed", run)
	}
	time.Sleep(500 * time.Millisecond) // room for a wrong second request; bounded
	if n := model.requests.Load(); n != 1 {
		t.Fatalf("the model was asked %d times: the stopped run went on", n)
	}
	s.stop(t)
}

// Issue 27 item 4: crew stop <conversation> and crew stop --all against a
// running server; the run is stopped by cli.
func TestCrewStopCLI(t *testing.T) {
	home := initHome(t)
	model := &hangingModel{}
	s := startServe(t, home, model.env(t)...)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "write me a long story"})
	id := acc["conversation_id"].(string)
	waitConv(t, s.url, id, "running", func(c convView) bool { return c.Status == "running" && model.requests.Load() == 1 })
	out, errOut, code := crew(t, home, "stop", id)
	if code != 0 || !strings.Contains(out, "stopped "+id) {
		t.Fatalf("crew stop = %d %q %q", code, out, errOut)
	}
	c := waitConv(t, s.url, id, "stopped", func(c convView) bool { return c.Status == "stopped" })
	var run stoppedRun
	getJSON(t, s.url+"/api/runs/"+c.LastRunID, &run)
	if run.Status != "stopped" || run.StoppedBy != "cli" {
		t.Fatalf("run = %+v, want stopped by cli", run)
	}
	if want := "stopped " + id + " (run " + c.LastRunID + ", 0 waiting dropped)\n"; out != want {
		t.Errorf("crew stop printed %q, want %q", out, want)
	}
	if _, errOut, code := crew(t, home, "stop", "--all"); code == 0 || !strings.Contains(errOut, "no conversation has a run open") {
		t.Fatalf("crew stop --all with nothing running = %d %q", code, errOut)
	}
	s.stop(t)
}
