package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// R-HOME-4: adding an agent folder, or breaking one, is picked up by the
// running server without a restart; the broken agent is reported in the UI
// with file:line:col and the others keep running.
func TestAgentFolderChangesReloadWithoutRestart(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	if _, _, code := crew(t, home, "init"); code != 0 {
		t.Fatal("init failed")
	}
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:echo")
	if code, body := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "hi", "agent": "scout"}); code != 404 {
		t.Fatalf("message to a missing agent = %d %v, want 404", code, body)
	}

	writeAgent(t, home, "scout", "name: Scout\ndescription: Looks around.\nroutes: [fake:echo]\ntools: [workspace_list]\n")
	var id string
	eventstest.Eventually(t, "the new agent to take messages", func() bool {
		code, body := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "hello scout", "agent": "scout"})
		if code == 202 {
			id = body["conversation_id"].(string)
		}
		return code == 202
	})
	c := waitConv(t, s.url, id, "answered", settled)
	if last := c.History[len(c.History)-1]; !strings.Contains(last.Text, "hello scout") {
		t.Errorf("scout answered %q", last.Text)
	}

	// A schedule added to agent.yaml joins the timetable.
	writeAgent(t, home, "scout", "name: Scout\ndescription: Looks around.\nroutes: [fake:echo]\ntools: [workspace_list]\nschedules:\n  - name: morning\n    cron: \"0 7 * * *\"\n    prompt: Look around.\n")
	eventstest.Eventually(t, "the new schedule in /api/jobs", func() bool {
		var jobs []struct {
			ID     string `json:"id"`
			Agent  string `json:"agent"`
			Status string `json:"status"`
		}
		getJSON(t, s.url+"/api/jobs", &jobs)
		for _, j := range jobs {
			if j.ID == "scout-morning" && j.Agent == "scout" {
				return true
			}
		}
		return false
	})
	if code, body := postJSON(t, s.url+"/api/jobs/scout-morning/run", map[string]any{}); code != 202 {
		t.Errorf("run the reloaded schedule now = %d %v", code, body)
	}

	// Break it: the page names the file, line and column; the master runs on.
	writeAgent(t, home, "scout", "name: Scout\nmax_steps: lots\n")
	eventstest.Eventually(t, "the broken agent.yaml in the banner", func() bool {
		page := getPage(t, s.url+"/")
		return strings.Contains(page, filepath.Join("agents", "scout", "agent.yaml")+":2:12")
	})
	if code, _ := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "still there?", "agent": "scout"}); code != 404 {
		t.Errorf("message to the broken agent = %d, want 404", code)
	}
	code, body := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "and you?"})
	if code != 202 {
		t.Fatalf("master after the reload = %d %v", code, body)
	}
	waitConv(t, s.url, body["conversation_id"].(string), "answered", settled)
	s.stop(t)
}

func writeAgent(t *testing.T, home, id, yaml string) {
	t.Helper()
	dir := filepath.Join(home, "agents", id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// A new size and a new time, so the change is seen even within the
	// file system's timestamp granularity.
	path := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Duration(len(yaml)) * time.Second)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
}

func getPage(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
