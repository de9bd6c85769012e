package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events/eventstest"
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
	eventstest.Eventually(t, "the job to complete", func() bool {
		getJSON(t, s.url+"/api/jobs", &jobs)
		return jobs[0]["last_status"] == "ok"
	})
	conv, _ := jobs[0]["last_conversation"].(string)
	c := waitConv(t, s.url, conv, "answered", settled)
	if last := c.History[len(c.History)-1]; last.Text != "echo: Say good morning" {
		t.Errorf("job answer = %+v", last)
	}
	s.stop(t)
}

// schedule_create always asks — even in an autonomous conversation — and
// once the owner approves the exact prompt the job exists without a
// restart (origin chat), is listed on the jobs page, and can be cancelled.
func TestScheduleCreateAlwaysAsksThenRuns(t *testing.T) {
	home := initHome(t)
	agentYAML := filepath.Join(home, "agent.yaml")
	b, _ := os.ReadFile(agentYAML)
	os.WriteFile(agentYAML, []byte(strings.Replace(string(b), "autonomous: false", "autonomous: true", 1)), 0o600)
	script := writeScript(t, `
- tool_calls:
    - name: schedule_create
      arguments: {name: standup, cron: "0 9 * * 1-5", prompt: "Ask me about today's plan"}
- text: "Your standup reminder is set."
`)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+script)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "remind me every weekday at 9"})
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "awaiting approval", func(c convView) bool { return c.Status == "awaiting_approval" })
	if c.PendingApprovals[0].Tool != "schedule_create" {
		t.Fatalf("pending = %+v", c.PendingApprovals)
	}
	var jobs []map[string]any
	if getJSON(t, s.url+"/api/jobs", &jobs); len(jobs) != 0 {
		t.Fatalf("a job exists before approval: %v", jobs)
	}
	postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"})
	waitConv(t, s.url, id, "answered", settled)
	eventstest.Eventually(t, "a job after the approval", func() bool {
		getJSON(t, s.url+"/api/jobs", &jobs)
		return len(jobs) == 1
	})
	if jobs[0]["id"] != "master-standup" || jobs[0]["origin"] != "chat" || jobs[0]["prompt"] != "Ask me about today's plan" {
		t.Errorf("job = %v", jobs[0])
	}
	resp, err := http.Get(s.url + "/jobs")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("jobs page: %v %v", resp.StatusCode, err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `data-job-id="master-standup"`) || !strings.Contains(string(page), `data-testid="job-cancel"`) {
		t.Errorf("jobs page lacks the job or its cancel button")
	}
	req, _ := http.NewRequest(http.MethodPost, s.url+"/api/jobs/master-standup/cancel", nil)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("cancel = %v %v", resp.StatusCode, err)
	}
	eventstest.Eventually(t, "the job to be cancelled", func() bool {
		getJSON(t, s.url+"/api/jobs", &jobs)
		return jobs[0]["cancelled"] != nil
	})
	s.stop(t)
}
