package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	brief := func() map[string]any {
		for _, j := range jobs {
			if j["id"] == "master-brief" {
				return j
			}
		}
		return nil
	}
	if getJSON(t, s.url+"/api/jobs", &jobs) != 200 || brief() == nil || brief()["origin"] != "profile" || brief()["enabled"] != true {
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
		return brief()["last_status"] == "ok"
	})
	conv, _ := brief()["last_conversation"].(string)
	c := waitConv(t, s.url, conv, "answered", settled)
	if last := c.History[len(c.History)-1]; last.Text != "echo: Say good morning" {
		t.Errorf("job answer = %+v", last)
	}
	s.stop(t)
}

// jobByID is the job of /api/jobs with id (nil: none).
func jobByID(jobs []map[string]any, id string) map[string]any {
	for _, j := range jobs {
		if j["id"] == id {
			return j
		}
	}
	return nil
}

// Issue 28: GET /api/jobs on a fresh crew init home lists the seven
// schedules the example agents ship disabled (not null, not empty), and
// POST /api/jobs/{id}/enabled writes enabled: back into agent.yaml, its
// comments kept, the scheduler taking it at once.
func TestJobsListsEveryScheduleAndTogglesEnabled(t *testing.T) {
	home := initHome(t)
	s := startServe(t, home)
	var jobs []map[string]any
	if getJSON(t, s.url+"/api/jobs", &jobs) != 200 {
		t.Fatal("GET /api/jobs failed")
	}
	if len(jobs) != 7 {
		t.Fatalf("a fresh home lists %d jobs, want the 7 disabled schedules: %v", len(jobs), jobs)
	}
	for _, j := range jobs {
		if j["enabled"] != false || j["status"] != "disabled" || j["origin"] != "profile" || j["cron"] == "" {
			t.Errorf("job %v: want disabled, profile, with its cron", j)
		}
	}
	path := filepath.Join(home, "agents", "pong", "agent.yaml")
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := postJSON(t, s.url+"/api/jobs/pong-morning-brief/enabled", map[string]any{"enabled": true}); code != 200 {
		t.Fatalf("enable: %d %s", code, body)
	}
	after, _ := os.ReadFile(path)
	if want := strings.Replace(string(before), "prompt: \"Write my morning brief: today's calendar, mail that needs me, due tasks. Short.\"\n    enabled: false", "prompt: \"Write my morning brief: today's calendar, mail that needs me, due tasks. Short.\"\n    enabled: true", 1); string(after) != want || want == string(before) {
		t.Fatalf("agent.yaml after enabling:\n%s", after)
	}
	eventstest.Eventually(t, "the schedule enabled, with a next run", func() bool {
		getJSON(t, s.url+"/api/jobs", &jobs)
		for _, j := range jobs {
			if j["id"] == "pong-morning-brief" {
				return j["enabled"] == true && j["next_run"] != nil && j["status"] != "disabled"
			}
		}
		return false
	})
	if code, _ := postJSON(t, s.url+"/api/jobs/pong-morning-brief/enabled", map[string]any{"enabled": false}); code != 200 {
		t.Fatal("disable failed")
	}
	if back, _ := os.ReadFile(path); string(back) != string(before) {
		t.Errorf("enabling then disabling did not give the file back:\n%s", back)
	}
	if code, _ := postJSON(t, s.url+"/api/jobs/no-such-job/enabled", map[string]any{"enabled": true}); code != 404 {
		t.Errorf("an unknown job: %d, want 404", code)
	}
	if code, _ := postJSON(t, s.url+"/api/jobs/pong-morning-brief/enabled", map[string]any{}); code != 400 {
		t.Errorf("no enabled: %d, want 400", code)
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
	if getJSON(t, s.url+"/api/jobs", &jobs); jobByID(jobs, "master-standup") != nil {
		t.Fatalf("a job exists before approval: %v", jobs)
	}
	postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"})
	waitConv(t, s.url, id, "answered", settled)
	eventstest.Eventually(t, "a job after the approval", func() bool {
		getJSON(t, s.url+"/api/jobs", &jobs)
		return jobByID(jobs, "master-standup") != nil
	})
	if j := jobByID(jobs, "master-standup"); j["origin"] != "chat" || j["prompt"] != "Ask me about today's plan" || j["enabled"] != true {
		t.Errorf("job = %v", j)
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
		return jobByID(jobs, "master-standup")["cancelled"] != nil
	})
	s.stop(t)
}

// R-JOB, issue 28, through crew serve: a one-shot job created with
// schedule_create whose run fails twice is retried (after the test
// build's CREW_TEST_JOB_RETRY_DELAYS, 10 s, 30 s and 90 s otherwise) and
// its third run completes it. A restart of crew serve while the first
// retry waits keeps it (the retry is a job_retry_scheduled event);
// /api/jobs and the jobs page show the pending retry and its time.
func TestOneShotJobFailsTwiceThenSucceedsThroughServe(t *testing.T) {
	home := initHome(t)
	at := time.Now().Add(6 * time.Second).UTC().Format(time.RFC3339)
	first := writeScript(t, `
- tool_calls:
    - name: schedule_create
      arguments: {name: eggs, at: "`+at+`", prompt: "Remind me to buy eggs"}
- text: "I will remind you."
- error: 400
`)
	const delays = "CREW_TEST_JOB_RETRY_DELAYS=3s,3s,3s"
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+first, delays)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "remind me to buy eggs in a few seconds"})
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "awaiting approval", func(c convView) bool { return c.Status == "awaiting_approval" })
	postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"})
	var jobs []map[string]any
	eventstest.EventuallyWithin(t, 60*time.Second, "the first run to fail and a retry to wait", func() bool {
		jobs = nil // Unmarshal would merge into the maps of the last answer
		getJSON(t, s.url+"/api/jobs", &jobs)
		j := jobByID(jobs, "master-eggs")
		return j != nil && j["status"] == "retrying" && j["retry_attempt"] == 2.0 && j["retry_at"] != nil
	})
	if j := jobByID(jobs, "master-eggs"); j["last_status"] != "failed" || j["runs"] != 1.0 || j["failures"] != 1.0 {
		t.Fatalf("after the first failure: %v", j)
	}
	resp, err := http.Get(s.url + "/jobs")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `data-testid="job-retry"`) || !strings.Contains(string(page), "attempt 2 at") {
		t.Errorf("the jobs page does not show the pending retry")
	}
	s.stop(t)

	// A new process, a new script (its replies start from the first): the
	// second run fails, the third succeeds.
	second := writeScript(t, `
- error: 400
- text: "Buy eggs!"
`)
	s = startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+second, delays)
	eventstest.EventuallyWithin(t, 60*time.Second, "the job to complete on its third run", func() bool {
		jobs = nil // Unmarshal would merge into the maps of the last answer
		getJSON(t, s.url+"/api/jobs", &jobs)
		j := jobByID(jobs, "master-eggs")
		return j != nil && j["last_status"] == "ok"
	})
	j := jobByID(jobs, "master-eggs")
	if j["runs"] != 3.0 || j["failures"] != 2.0 || j["last_attempt"] != 3.0 || j["retry_at"] != nil || j["status"] != "idle" {
		t.Errorf("after the third run: %v; want 3 runs, 2 failed, attempt 3, no retry", j)
	}
	conv, _ := j["last_conversation"].(string)
	if !strings.HasSuffix(conv, "-r3") {
		t.Errorf("the third run's conversation %q, want its own (-r3)", conv)
	}
	if c := waitConv(t, s.url, conv, "answered", settled); c.History[len(c.History)-1].Text != "Buy eggs!" {
		t.Errorf("the third run answered %+v", c.History[len(c.History)-1])
	}
	s.stop(t)
}

// Issue 28, seed 004's list_crons and cancel_cron through crew serve: the
// master lists only its own jobs (its agent.yaml schedule and the job it
// created with schedule_create, not pong's); it cancels the job it
// created without asking; another agent's job is not found; cancelling
// its agent.yaml schedule asks and, approved, writes enabled: false back.
func TestListAndCancelCronsOwnershipThroughServe(t *testing.T) {
	home := initHome(t)
	agentYAML := filepath.Join(home, "agent.yaml")
	f, _ := os.OpenFile(agentYAML, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("schedules:\n  - name: brief\n    cron: \"0 7 * * *\"\n    prompt: \"Say good morning\"\n")
	f.Close()
	script := writeScript(t, `
- tool_calls:
    - name: schedule_create
      arguments: {name: standup, cron: "0 9 * * 1-5", prompt: "Ask me about today's plan"}
- tool_calls:
    - name: list_crons
- tool_calls:
    - name: cancel_cron
      arguments: {id: master-standup}
- tool_calls:
    - name: cancel_cron
      arguments: {id: pong-morning-brief}
- tool_calls:
    - name: cancel_cron
      arguments: {id: master-brief}
- text: "Done."
`)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+script)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "tidy my schedules"})
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "asking for schedule_create", func(c convView) bool { return c.Status == "awaiting_approval" })
	postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"})
	c = waitConv(t, s.url, id, "asking for cancel_cron of the schedule", func(c convView) bool {
		return c.Status == "awaiting_approval" && c.PendingApprovals[0].Tool != "schedule_create"
	})
	if c.PendingApprovals[0].Tool != "cancel_cron" {
		t.Fatalf("pending = %+v, want cancel_cron of master-brief", c.PendingApprovals)
	}
	var tools []string
	for _, h := range c.History {
		if h.Role == "tool" {
			tools = append(tools, h.Text)
		}
	}
	if len(tools) != 4 {
		t.Fatalf("tool results before the ask: %q, want schedule_create, list_crons and two cancel_cron", tools)
	}
	list := tools[1]
	if !strings.Contains(list, "master-brief") || !strings.Contains(list, "master-standup") || strings.Contains(list, "pong-") {
		t.Errorf("list_crons showed:\n%s\nwant the master's two jobs and no other agent's", list)
	}
	if !strings.Contains(tools[2], "Cancelled job master-standup") {
		t.Errorf("cancel_cron of its own chat job: %q", tools[2])
	}
	if !strings.Contains(tools[3], `has no job "pong-morning-brief"`) {
		t.Errorf("cancel_cron of pong's job: %q", tools[3])
	}
	var jobs []map[string]any
	getJSON(t, s.url+"/api/jobs", &jobs)
	if j := jobByID(jobs, "pong-morning-brief"); j == nil || j["status"] != "disabled" {
		t.Errorf("pong's job changed: %v", j)
	}
	before, _ := os.ReadFile(agentYAML)
	postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"})
	waitConv(t, s.url, id, "answered", settled)
	after, _ := os.ReadFile(agentYAML)
	if want := strings.Replace(string(before), "  - name: brief\n", "  - name: brief\n    enabled: false\n", 1); string(after) != want {
		t.Errorf("agent.yaml after cancel_cron of brief:\n%s", after)
	}
	eventstest.Eventually(t, "the chat job cancelled and the schedule disabled", func() bool {
		jobs = nil
		getJSON(t, s.url+"/api/jobs", &jobs)
		std, brief := jobByID(jobs, "master-standup"), jobByID(jobs, "master-brief")
		return std != nil && std["cancelled"] != nil && brief != nil && brief["enabled"] == false
	})
	s.stop(t)
}

// Issue 28: crew doctor names the address the running server listens on
// and its real URL (the port chosen for --listen 127.0.0.1:0), not only
// the configured listen address.
func TestDoctorShowsTheRunningServersRealURL(t *testing.T) {
	home := initHome(t)
	s := startServe(t, home)
	out, _, _ := crew(t, home, "doctor")
	port := s.url[strings.LastIndex(s.url, ":")+1:]
	if !strings.Contains(out, "listens on 127.0.0.1:"+port+": "+s.url) {
		t.Errorf("doctor does not name the running server's URL %s:\n%s", s.url, out)
	}
	s.stop(t)
	if out, _, _ := crew(t, home, "doctor"); strings.Contains(out, "listens on") {
		t.Errorf("doctor names a server after it stopped:\n%s", out)
	}
}
