package team_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/loop/team/teamtest"
)

// A repository's own settings are the agent's words (it writes the
// workspace): each one that makes git run a program is planted, then
// create_worktree runs. The program would write a marker outside the
// workspace and copy <home>/env; neither may happen, and it does not even
// run inside. The same plant makes the host's plain git run it (the
// control), so the test can fail.
//
// In a supervised conversation create_worktree asks first (nothing of the
// worktree exists while it waits); in an autonomous one it runs unasked.
func TestCreateWorktreeRunsNothingTheRepositoryPlants(t *testing.T) {
	for _, kind := range teamtest.Kinds {
		for _, seat := range []string{"supervised", "autonomous"} {
			t.Run(kind+"/"+seat, func(t *testing.T) { plantedThenWorktree(t, kind, seat == "autonomous") })
		}
	}
}

func plantedThenWorktree(t *testing.T, kind string, autonomous bool) {
	payload := teamtest.Payload(t, t.TempDir())
	teamtest.Control(t, kind, payload)

	h := newHarness(t, func(who, last string, msgs []llm.Message) reply {
		if strings.Contains(last, "make a worktree") {
			return use("create_worktree", args("name", "wt1", "task_id", "task_0000000a"))
		}
		return say("done")
	})
	h.stop()
	h.home = filepath.Dir(h.ws) // the master's folder is the home
	os.WriteFile(filepath.Join(h.home, "env"), []byte("OPENROUTER_API_KEY=sk-or-planted-secret-123456\n"), 0o600)
	if autonomous {
		h.autonomous()
	}
	h.start()
	gitRepo(t, h.ws)
	teamtest.Plant(t, h.ws, kind, payload)
	h.boardEvents(&events.TaskCreated{TaskID: "task_0000000a", Subject: "a"})
	h.send("make a worktree")
	if !autonomous {
		eventstest.Eventually(t, "create_worktree's approval", func() bool {
			a := h.state(leadConv).PendingApproval()
			return a != nil && a.Tool == "create_worktree"
		})
		if _, err := os.Lstat(filepath.Join(h.ws, ".worktrees")); err == nil {
			t.Fatal("git ran before the owner was asked")
		}
		h.approve()
	}
	h.quiet("the call", func() bool {
		return len(h.results(leadConv, "create_worktree")) == 1 && h.state(leadConv).OpenRun == ""
	})
	if asked := h.asked(leadConv, "create_worktree"); asked != !autonomous {
		t.Fatalf("asked %v in a conversation autonomous %v", asked, autonomous)
	}
	if out := h.lastResult(leadConv, "create_worktree"); !strings.Contains(out, "Created worktree wt1") {
		t.Fatalf("create_worktree: %q", out)
	}
	if _, err := os.Stat(filepath.Join(h.ws, ".worktrees", "wt1", "auth.go")); err != nil {
		t.Fatalf("the checkout: %v", err)
	}
	teamtest.NothingRan(t, payload, h.ws, "planted-secret")
}
