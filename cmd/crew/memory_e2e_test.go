package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// memoryProposal is a proposal as the API shows it.
type memoryProposal struct {
	ID      string `json:"id"`
	Agent   string `json:"agent"`
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	Auto    bool   `json:"auto"`
	Trigger string `json:"trigger"`
	File    string `json:"file"`
	Tool    string `json:"tool"`
	Added   int    `json:"added"`
	Diff    []struct {
		Op   string `json:"op"`
		Text string `json:"text"`
	} `json:"diff"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func postMemory(t *testing.T, url string, body any) (int, memoryProposal) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p memoryProposal
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("POST %s: %v\n%s", url, err, raw)
	}
	return resp.StatusCode, p
}

// crewEnv runs a crew command with extra environment.
func crewEnv(t *testing.T, home string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), crewBin, args...)
	cmd.Env = append(append(os.Environ(), "CREW_HOME="+home), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run crew %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// R-MEM-2 end to end on a real crew serve: a supervised agent's proposal
// waits at /api/memory/proposals; approve writes MEMORY.md, a second
// decision is refused, rollback puts the old text back. The scheduled job
// and the CLI (through the server, then in process) file proposals too.
func TestMemoryConsolidationOverHTTP(t *testing.T) {
	home := initHome(t)
	memory := filepath.Join(home, "MEMORY.md")
	old, err := os.ReadFile(memory)
	if err != nil {
		t.Fatal(err)
	}
	// Notes of yesterday and today (UTC), so today in the owner's zone
	// has notes whatever that zone is.
	os.MkdirAll(filepath.Join(home, "memory"), 0o755)
	for _, day := range []time.Time{time.Now().UTC().AddDate(0, 0, -1), time.Now().UTC()} {
		os.WriteFile(filepath.Join(home, "memory", day.Format(time.DateOnly)+".md"), []byte("- 09:00 owner runs 10k every Sunday\n"), 0o644)
	}
	f, _ := os.OpenFile(filepath.Join(home, "agent.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("schedules:\n  - name: weekly-memory\n    cron: \"0 18 * * 0\"\n    consolidate: true\n")
	f.Close()
	v1 := string(old) + "\n- Owner runs 10k every Sunday.\n"
	script := writeScript(t, `
- text: `+jsonText(v1)+`
- text: `+jsonText(v1+"- Likes oat milk.\n")+`
- text: `+jsonText(v1+"- Trains for a marathon.\n")+`
`)
	routes := "MY_AGENT_ROUTES=fake:script:" + script
	s := startServe(t, home, routes)
	api := s.url + "/api/memory"

	code, p := postMemory(t, api+"/consolidate", map[string]any{"agent": "master"})
	if code != 201 || p.Kind != "add_only" || p.Status != "pending" || p.Auto || p.Trigger != "api" || p.Added != 2 {
		t.Fatalf("consolidate = %d %+v\n%s", code, p, s.stderr)
	}
	if b, _ := os.ReadFile(memory); string(b) != string(old) {
		t.Fatalf("MEMORY.md changed before approval: %q", b)
	}
	var list []memoryProposal
	if getJSON(t, api+"/proposals?agent=master", &list) != 200 || len(list) != 1 || list[0].ID != p.ID || list[0].Status != "pending" {
		t.Fatalf("proposals = %+v", list)
	}
	var got memoryProposal
	if getJSON(t, api+"/proposals/"+p.ID, &got) != 200 || len(got.Diff) == 0 || got.Diff[len(got.Diff)-1].Op != "+" {
		t.Errorf("proposal with diff = %+v", got)
	}
	resp, err := http.Get(s.url + "/memory")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), `data-proposal-id="`+p.ID+`"`) || !strings.Contains(string(page), "diff-add") {
		t.Errorf("/memory = %d, lacks the proposal or its diff", resp.StatusCode)
	}

	if code, p = postMemory(t, api+"/proposals/"+p.ID, map[string]any{"decision": "approve"}); code != 200 || p.Status != "applied" {
		t.Fatalf("approve = %d %+v", code, p)
	}
	if b, _ := os.ReadFile(memory); string(b) != v1 {
		t.Fatalf("MEMORY.md after approve = %q, want %q", b, v1)
	}
	if code, again := postMemory(t, api+"/proposals/"+p.ID, map[string]any{"decision": "reject"}); code != 409 || again.Error == nil || again.Error.Code != "already_decided" {
		t.Errorf("second decision = %d %+v", code, again.Error)
	}
	if code, p = postMemory(t, api+"/proposals/"+p.ID+"/rollback", nil); code != 200 || p.Status != "rolled_back" {
		t.Fatalf("rollback = %d %+v", code, p)
	}
	if b, _ := os.ReadFile(memory); string(b) != string(old) {
		t.Fatalf("MEMORY.md after rollback = %q, want the old %q", b, old)
	}

	// The weekly job, run now, files the next proposal; it waits too.
	req, _ := http.NewRequest(http.MethodPost, s.url+"/api/jobs/master-weekly-memory/run", nil)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 202 {
		t.Fatalf("run the consolidate job: %v %v", resp, err)
	}
	var jobs []map[string]any
	eventstest.Eventually(t, "the consolidate job to complete", func() bool {
		jobs = nil
		getJSON(t, s.url+"/api/jobs", &jobs)
		return jobByID(jobs, "master-weekly-memory")["last_status"] == "ok"
	})
	if out, _ := jobByID(jobs, "master-weekly-memory")["last_output"].(string); !strings.Contains(out, "add_only, waits for a human") {
		t.Errorf("job output = %q", out)
	}

	// The CLI asks the running server, which holds the store.
	out, errOut, code := crewEnv(t, home, nil, "memory", "consolidate", "master")
	if code != 0 || !strings.Contains(out, "for master: add_only") || !strings.Contains(out, "waits for you") || !strings.Contains(out, "+ - Trains for a marathon.") {
		t.Fatalf("crew memory consolidate (server) = %d\n%s\n%s", code, out, errOut)
	}
	getJSON(t, api+"/proposals", &list)
	if len(list) != 3 || list[0].Trigger != "cli" || list[1].Trigger != "job" || list[2].Status != "rolled_back" {
		t.Errorf("proposals = %+v", list)
	}
	s.stop(t)

	// With the server stopped, the CLI runs the service itself.
	out, errOut, code = crewEnv(t, home, []string{routes}, "memory", "consolidate", "master")
	if code != 0 || !strings.Contains(out, "for master: add_only") {
		t.Fatalf("crew memory consolidate (in process) = %d\n%s\n%s", code, out, errOut)
	}
	if _, errOut, code := crewEnv(t, home, []string{routes}, "memory", "consolidate", "nobody"); code != 1 || !strings.Contains(errOut, `"nobody" is not a loaded agent`) {
		t.Errorf("unknown agent = %d %q", code, errOut)
	}
	if b, _ := os.ReadFile(memory); string(b) != string(old) {
		t.Errorf("MEMORY.md changed by waiting proposals: %q", b)
	}
	s = startServe(t, home, routes)
	if getJSON(t, s.url+"/api/memory/proposals", &list); len(list) != 4 || list[0].Status != "pending" {
		t.Errorf("proposals after restart = %+v", list)
	}
	s.stop(t)
}

func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
