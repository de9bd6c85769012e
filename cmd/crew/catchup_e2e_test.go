package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/cmd/crew/faults"
)

// HTTP answers while the projections catch up (a home whose projections
// database is gone, as after an upgrade that adds a projection): /healthz
// says 503 catching_up with the events left, every page says so, and a
// message sent meanwhile is stored at once and answered once they are
// done.
func TestHealthzAnswersWhileProjectionsCatchUp(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	s := startServe(t, home)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "first"})
	waitConv(t, s.url, acc["conversation_id"].(string), "answered", settled)
	s.stop(t)
	if err := os.Remove(filepath.Join(home, "data", "projections.db")); err != nil {
		t.Fatal(err)
	}

	hold := filepath.Join(t.TempDir(), "hold")
	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s = launchServe(t, home, faults.HoldProjectionsEnv+"="+hold)
	var health struct {
		Status string `json:"status"`
		Lag    uint64 `json:"lag"`
	}
	if code := getJSON(t, s.url+"/healthz", &health); code != http.StatusServiceUnavailable || health.Status != "catching_up" || health.Lag == 0 {
		t.Fatalf("/healthz while catching up = %d %+v, want 503 catching_up with a lag", code, health)
	}
	resp, err := http.Get(s.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if m := regexp.MustCompile(`catching up: (\d+) events left`).FindSubmatch(page); resp.StatusCode != 200 || m == nil || string(m[1]) == "0" {
		t.Errorf("page while catching up: %d, no banner with the events left:\n%.2000s", resp.StatusCode, page)
	}
	code, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "are you there?"})
	if code != http.StatusAccepted {
		t.Fatalf("inbound while catching up = %d %v, want 202", code, acc)
	}
	id := acc["conversation_id"].(string)

	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, s.url)
	c := waitConv(t, s.url, id, "answered once caught up", settled)
	if last := c.History[len(c.History)-1].Text; !strings.Contains(last, "are you there?") {
		t.Errorf("reply %q does not echo the message sent while catching up", last)
	}
	if code := getJSON(t, s.url+"/healthz", &health); code != 200 || health.Status != "ready" {
		t.Errorf("/healthz after catching up = %d %+v", code, health)
	}
	s.stop(t)
}
