package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
)

// groupIn is the live process group tracked in home's shell records
// whose command holds script, 0 none.
func groupIn(home, script string) int {
	es, _ := os.ReadDir(filepath.Join(home, "data", "shell"))
	for _, e := range es {
		if p, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			cmdline, _ := os.ReadFile("/proc/" + p + "/cmdline")
			if n, _ := strconv.Atoi(p); n > 1 && syscall.Kill(-n, 0) == nil && strings.Contains(string(cmdline), script) {
				return n
			}
		}
	}
	return 0
}

// On a cluster a background task is its holder's: two crew serve share a
// 3-node cluster, one runs a task; the other is killed (kill -9) and
// started again, and the task, its runner alive, is left running (its
// process group there, listed running). Then the runner is killed: once
// its life lease lapses, the other ends the task ("killed: the server
// stopped before it ended (crash)"), with no start of the runner. A
// second task started after both starts is ended the same way when its
// runner dies.
func TestBackgroundTaskOfALivePeerIsNotEndedAtStart(t *testing.T) {
	c := eventstest.StartCluster(t, 3)
	model := &bgModel{}
	api := httptest.NewServer(model)
	defer api.Close()
	env := []string{"MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key-bg", "OPENROUTER_BASE_URL=" + api.URL + "/v1"}
	homes := make([]string, 2)
	servers := make([]*server, 2)
	for i, name := range []string{"one", "two"} {
		homes[i] = filepath.Join(t.TempDir(), name)
		if _, _, code := crew(t, homes[i], "init"); code != 0 {
			t.Fatal("init failed")
		}
		setNATSURL(t, homes[i], c.URL())
		servers[i] = startServe(t, homes[i], env...)
	}
	const script = "echo task-ready; sleep 300"
	_, acc := postJSON(t, servers[0].url+"/api/inbound", map[string]any{"text": "start: " + script})
	conv := acc["conversation_id"].(string)
	runner, pgid := -1, 0
	approveUntil(t, servers[0].url, conv, "the task to run on one of the two", func(c convView) bool {
		for i, h := range homes {
			if g := groupIn(h, script); g != 0 {
				runner, pgid = i, g
			}
		}
		return settled(c) && pgid != 0
	})
	other := 1 - runner
	servers[other].kill9(t)
	servers[other] = startServe(t, homes[other], env...)
	eventstest.Eventually(t, "the restarted process to leave the task to its live holder", func() bool {
		return strings.Contains(servers[other].stderr.String(), "background tasks left to their live holders")
	})
	if list := tasksOf(t, servers[other].url, conv); len(list) != 1 || list[0].State != "running" {
		t.Fatalf("after a peer's restart the live runner's task is listed %+v, want running", list)
	}
	if err := syscall.Kill(-pgid, 0); err != nil {
		t.Fatalf("the live runner's task %d was killed by a peer's restart: %v", pgid, err)
	}

	// A task started after both starts, on the same runner (a new
	// conversation until one lands there).
	var later, laterCmd string
	laterGroup := 0
	for i := 0; i < 6 && laterGroup == 0; i++ {
		script2 := "echo later-ready-" + strconv.Itoa(i) + "; sleep 301"
		_, acc := postJSON(t, servers[runner].url+"/api/inbound", map[string]any{"text": "start: " + script2})
		c2 := acc["conversation_id"].(string)
		approveUntil(t, servers[runner].url, c2, "the later task to run", func(c convView) bool {
			return settled(c) && (groupIn(homes[0], script2) != 0 || groupIn(homes[1], script2) != 0)
		})
		if g := groupIn(homes[runner], script2); g != 0 {
			later, laterCmd, laterGroup = c2, script2, g
		} else if g := groupIn(homes[other], script2); g != 0 {
			defer syscall.Kill(-g, syscall.SIGKILL) // runs on the other, killed at its stop
		}
	}
	if laterGroup == 0 {
		t.Fatalf("no later task ran on the runner in 6 conversations")
	}

	servers[runner].kill9(t)
	began := time.Now()
	for _, w := range []struct{ conv, cmd string }{{conv, script}, {later, laterCmd}} {
		eventstest.EventuallyWithin(t, 30*time.Second, "the gone runner's task "+w.cmd+" ended by the other", func() bool {
			for _, v := range tasksOf(t, servers[other].url, w.conv) {
				if v.Command == w.cmd {
					return v.State == "failed" && v.Failure == loop.LeftFailure
				}
			}
			return false
		})
		t.Logf("task %q ended %s after its runner's kill -9", w.cmd, time.Since(began).Round(time.Millisecond))
	}
	// Its home's tracker would, at the runner's next start.
	syscall.Kill(-pgid, syscall.SIGKILL)
	syscall.Kill(-laterGroup, syscall.SIGKILL)
	servers[other].stop(t)
}
