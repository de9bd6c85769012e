package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// setNATSURL points the home's config.yaml at an external NATS.
func setNATSURL(t *testing.T, home, url string) {
	t.Helper()
	path := filepath.Join(home, "config.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := regexp.MustCompile(`(?m)^nats:.*\n(\s+.*\n)*`).ReplaceAllString(string(b), "")
	if err := os.WriteFile(path, []byte(cfg+"nats:\n  url: "+url+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// R-ES-8: an unreachable nats.url is refused at start with one line
// naming it (its password masked), not silently replaced by the embedded
// server.
func TestServeRefusesUnreachableNATSURL(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	if _, _, code := crew(t, home, "init"); code != 0 {
		t.Fatal("init failed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	setNATSURL(t, home, "nats://crew:hunter2@"+addr)
	_, errOut, code := crew(t, home, "serve", "--listen", "127.0.0.1:0")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], "nats.url nats://crew:xxxxx@"+addr+": cannot connect") || strings.Contains(errOut, "hunter2") {
		t.Fatalf("serve: code %d, stderr %q; want one line naming the URL", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(home, "data", "nats")); err == nil {
		t.Errorf("the embedded store was started anyway")
	}
}

// R-ES-8: with nats.url on a 3-node cluster, crew serve keeps the log
// there with 3 replicas, answers a message, and doctor reports the
// cluster and the replicas.
func TestServeOnThreeNodeCluster(t *testing.T) {
	c := eventstest.StartCluster(t, 3)
	home := filepath.Join(t.TempDir(), "home")
	if _, _, code := crew(t, home, "init"); code != 0 {
		t.Fatal("init failed")
	}
	setNATSURL(t, home, c.URL())
	addBrief(t, home)
	s := startServe(t, home)
	eventstest.Eventually(t, "the first process to lead", func() bool { return strings.Contains(s.stderr.String(), "leading the cluster") })
	// serve reports the cluster after its "serving" line, once the stream
	// info has come back.
	eventstest.Eventually(t, "serve to report the cluster and its 3 replicas", func() bool {
		return strings.Contains(s.stdout.String(), "of 3 servers, stream CREW with 3 replicas")
	})
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "hello cluster"})
	waitConv(t, s.url, acc["conversation_id"].(string), "answered", settled)
	// A second crew process on the same cluster shares the work (R-ES-8):
	// a message it accepts is answered, once.
	other := filepath.Join(t.TempDir(), "other")
	if _, _, code := crew(t, other, "init"); code != 0 {
		t.Fatal("init failed")
	}
	setNATSURL(t, other, c.URL())
	addBrief(t, other)
	s2 := startServe(t, other)
	_, acc2 := postJSON(t, s2.url+"/api/inbound", map[string]any{"text": "hello from the second"})
	waitConv(t, s2.url, acc2["conversation_id"].(string), "answered", settled)
	// The standby's job API goes to the leader's scheduler: run now fires
	// the job once, and cancelling a profile job is refused as there.
	if code, _ := postJSON(t, s2.url+"/api/jobs/master-brief/run", nil); code != 202 {
		t.Fatalf("run now on the standby: %d", code)
	}
	var jobs []map[string]any
	eventstest.Eventually(t, "the job run from the standby to complete", func() bool {
		getJSON(t, s2.url+"/api/jobs", &jobs)
		return jobByID(jobs, "master-brief")["last_status"] == "ok"
	})
	if code, body := postJSON(t, s2.url+"/api/jobs/master-brief/cancel", nil); code != 409 {
		t.Errorf("cancel a profile job on the standby: %d %v, want 409", code, body)
	}
	s2.stop(t)
	out, _, code := crew(t, home, "doctor")
	if code != 0 || !regexp.MustCompile(`event log: NATS nats://127\.0\.0\.1:\d+,.*: cluster "crew-test" of 3 servers, stream CREW with 3 replicas \(leader n\d, n\d current, n\d current\); buckets crew_leases 3, crew_script_store 3, crew_web_sessions 3, crew_spill 3; crew processes: 1 \(leader crew serve pid `+strconv.Itoa(s.cmd.Process.Pid)+` `).MatchString(out) {
		t.Errorf("doctor: code %d\n%s", code, out)
	}
	s.stop(t)
}

// addBrief gives the master a daily profile job, master-brief.
func addBrief(t *testing.T, home string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(home, "agent.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("schedules:\n  - name: brief\n    cron: \"0 7 * * *\"\n    prompt: \"Say good morning\"\n")
	f.Close()
}
