package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// R-JOB end to end: a profile job from agent.yaml is listed, "run now"
// fires it on its own conversation (no inbound), and its run completes.
func TestJobRunNowOverHTTP(t *testing.T) {
	home := initHome(t)
	f, _ := os.OpenFile(filepath.Join(home, "agent.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("schedules:\n  - name: brief\n    cron: \"0 7 * * *\"\n    prompt: \"Say good morning\"\n")
	f.Close()
	s := startServe(t, home)
	var jobs []map[string]any
	if getJSON(t, s.url+"/api/jobs", &jobs) != 200 || len(jobs) != 1 || jobs[0]["id"] != "master-brief" || jobs[0]["origin"] != "profile" {
		t.Fatalf("jobs = %v", jobs)
	}
	req, _ := http.NewRequest(http.MethodPost, s.url+"/api/jobs/master-brief/run", bytes.NewReader(nil))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 202 {
		t.Fatalf("run now = %v, %v", resp.StatusCode, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		getJSON(t, s.url+"/api/jobs", &jobs)
		if jobs[0]["last_status"] == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job never completed: %v\n%s", jobs[0], s.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	conv, _ := jobs[0]["last_conversation"].(string)
	c := waitConv(t, s.url, conv, "answered", settled)
	if last := c.History[len(c.History)-1]; last.Text != "echo: Say good morning" {
		t.Errorf("job answer = %+v", last)
	}
	s.stop(t)
}
