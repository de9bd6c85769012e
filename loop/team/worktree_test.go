package team_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/loop/team"
)

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Seed 001 §9: create_worktree validates the task, the name, the path and
// the branch, and a git failure after partial work leaves the task unbound
// and the partial checkout kept, reported as partial.
func TestCreateWorktreeValidatesAndReportsPartial(t *testing.T) {
	h := newHarness(t, func(who, last string, msgs []llm.Message) reply {
		if strings.Contains(last, "make worktrees") {
			return uses(tc("create_worktree", args("name", "Bad Name", "task_id", "task_0000000a")),
				tc("create_worktree", args("name", "wt1", "task_id", "task_0000000b")),
				tc("create_worktree", args("name", "wt2", "task_id", "task_0000000a")),
				tc("create_worktree", args("name", "wt2", "task_id", "task_0000000c")))
		}
		return say("done")
	})
	h.autonomous() // supervised, each call asks: TestCreateWorktreeRunsNothingTheRepositoryPlants
	gitRepo(t, h.ws)
	h.boardEvents(&events.TaskCreated{TaskID: "task_0000000a", Subject: "a"}, &events.TaskCreated{TaskID: "task_0000000b", Subject: "b"},
		&events.TaskCreated{TaskID: "task_0000000c", Subject: "c"},
		&events.TaskClaimed{TaskID: "task_0000000b", Owner: "alice", How: "claim"})
	h.send("make worktrees")
	h.quiet("the lead's calls", func() bool {
		return len(h.results(leadConv, "create_worktree")) == 4 && h.state(leadConv).OpenRun == ""
	})
	rs := h.results(leadConv, "create_worktree")
	want := []string{"must be 1-32 of a-z", "only a pending, unowned task", "Created worktree wt2", "the name wt2 is taken"}
	for i, r := range rs {
		if !strings.Contains(r.Output, want[i]) {
			t.Errorf("call %d: %q, want %q", i, r.Output, want[i])
		}
	}
	b := h.board()
	if w := b.Tasks["task_0000000a"].Worktree; w == nil || w.Branch != "wt/wt2" {
		t.Fatalf("task a's binding: %+v", w)
	}
	if b.Tasks["task_0000000c"].Worktree != nil || b.Tasks["task_0000000b"].Worktree != nil {
		t.Fatal("a refused worktree was bound")
	}
	if strings.Contains(gitOut(t, h.ws, "status", "--porcelain"), ".worktrees") {
		t.Fatal(".worktrees shows in the repository's status")
	}
}

// A git failure after the branch was made: reported as partial, the task
// left unbound, the branch kept for manual recovery.
func TestCreateWorktreePartialFailureKeptAndReported(t *testing.T) {
	h := newHarness(t, func(who, last string, msgs []llm.Message) reply {
		if strings.Contains(last, "make a worktree") {
			return use("create_worktree", args("name", "wt3", "task_id", "task_0000000a"))
		}
		return say("done")
	})
	h.autonomous()
	gitRepo(t, h.ws)
	os.WriteFile(filepath.Join(h.ws, ".worktrees"), []byte("a file where the folder goes\n"), 0o600)
	h.boardEvents(&events.TaskCreated{TaskID: "task_0000000a", Subject: "a"})
	h.send("make a worktree")
	h.quiet("the call", func() bool {
		return len(h.results(leadConv, "create_worktree")) == 1 && h.state(leadConv).OpenRun == ""
	})
	out := h.lastResult(leadConv, "create_worktree")
	if !strings.Contains(out, "partial") || !strings.Contains(out, "branch wt/wt3") || !strings.Contains(out, "stays unbound") {
		t.Fatalf("result: %q", out)
	}
	if h.board().Tasks["task_0000000a"].Worktree != nil {
		t.Fatal("a partial worktree was bound")
	}
	if !strings.Contains(gitOut(t, h.ws, "branch", "--list", "wt/wt3"), "wt/wt3") {
		t.Fatal("the partial branch was not kept")
	}
}

// Seed 001 §10: the host's removal refuses a pending or in-progress
// task's worktree, one a teammate holds for its turn, and — without
// discard — one with tracked, untracked or ignored changes; it keeps the
// wt/<name> branch and drops the binding.
func TestWorktreeRemovalRefusals(t *testing.T) {
	h := newHarness(t, silent)
	h.openLead()
	gitRepo(t, h.ws)
	os.WriteFile(filepath.Join(h.ws, ".gitignore"), []byte("*.log\n"), 0o600)
	gitOut(t, h.ws, "add", ".")
	gitOut(t, h.ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "ignore")
	path := filepath.Join(h.ws, ".worktrees", "wt1")
	gitOut(t, h.ws, "worktree", "add", "-q", "-b", "wt/wt1", path, "HEAD")
	h.boardEvents(&events.TaskCreated{TaskID: "task_0000000a", Subject: "a"},
		&events.TaskWorktreeBound{TaskID: "task_0000000a", Name: "wt1", Path: path, Branch: "wt/wt1"})
	ctx := context.Background()
	refused := func(what string, want error) {
		t.Helper()
		if _, err := h.rt.Remove(ctx, "wt1", "", false); !errors.Is(err, want) {
			t.Fatalf("%s: %v, want %v", what, err, want)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s: the checkout went: %v", what, err)
		}
	}
	refused("a pending task", team.ErrWorktreeInUse)
	h.boardEvents(&events.TaskClaimed{TaskID: "task_0000000a", Owner: "alice", How: "claim"})
	refused("an in-progress task", team.ErrWorktreeInUse)
	// A teammate still in its turn after completing holds the folder.
	seat := loop.Seat{Conversation: team.MemberConversation(leadConv, "alice"), Team: leadConv, Member: "alice"}
	if dir, _ := h.rt.Workdir(seat, "shell_run"); dir != path {
		t.Fatalf("alice's folder: %q", dir)
	}
	h.boardEvents(&events.TaskCompleted{TaskID: "task_0000000a", Owner: "alice", Result: "done"})
	refused("a live lease", team.ErrWorktreeInUse)
	h.stop()
	h.start() // the lease was for a turn of a stopped server
	for _, change := range []struct{ file, what string }{{"auth.go", "tracked"}, {"new.txt", "untracked"}, {"debug.log", "ignored"}} {
		os.WriteFile(filepath.Join(path, change.file), []byte("changed\n"), 0o600)
		refused(change.what+" change", team.ErrWorktreeDirty)
		if change.file == "auth.go" {
			gitOut(t, path, "checkout", "auth.go")
		} else {
			os.Remove(filepath.Join(path, change.file))
		}
	}
	os.WriteFile(filepath.Join(path, "keep.log"), []byte("x"), 0o600)
	msg, err := h.rt.Remove(ctx, "wt1", "", true)
	if err != nil || !strings.Contains(msg, "branch wt/wt1 is kept") {
		t.Fatalf("remove --discard: %q %v", msg, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the checkout is still there: %v", err)
	}
	if !strings.Contains(gitOut(t, h.ws, "branch", "--list", "wt/wt1"), "wt/wt1") {
		t.Fatal("the branch went with the worktree")
	}
	if w := h.board().Tasks["task_0000000a"].Worktree; w != nil {
		t.Fatalf("the binding stayed: %+v", w)
	}
	if _, err := h.rt.Remove(ctx, "wt1", "", false); !errors.Is(err, team.ErrNoWorktree) {
		t.Fatalf("a second removal: %v", err)
	}
}
