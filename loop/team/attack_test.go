package team_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/tmc/langchaingo/llms"
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
	for _, kind := range []string{"hook", "filter", "fsmonitor", "sshCommand-gitmodules"} {
		for _, seat := range []string{"supervised", "autonomous"} {
			t.Run(kind+"/"+seat, func(t *testing.T) { plantedThenWorktree(t, kind, seat == "autonomous") })
		}
	}
}

func plantedThenWorktree(t *testing.T, kind string, autonomous bool) {
	outside := t.TempDir()
	payload := writePayload(t, outside)
	if kind != "sshCommand-gitmodules" { // git 2.39's worktree add never recurses into submodules
		ctl := t.TempDir()
		gitRepo(t, ctl)
		plant(t, ctl, kind, payload)
		gitOut(t, ctl, "worktree", "add", "-q", "-b", "wt/ctl", filepath.Join(ctl, ".worktrees", "ctl"), "HEAD")
		if _, err := os.Stat(filepath.Join(outside, "ran-"+kind)); err != nil {
			t.Fatalf("control: the host's git did not run the planted %s, so this test proves nothing: %v", kind, err)
		}
		os.Remove(filepath.Join(outside, "ran-"+kind))
	}

	h := newHarness(t, func(who, last string, msgs []llms.MessageContent) reply {
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
	plant(t, h.ws, kind, payload)
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
	entries, _ := os.ReadDir(outside)
	for _, e := range entries {
		if e.Name() != "payload.sh" {
			t.Errorf("the planted %s wrote %s outside the workspace", kind, e.Name())
		}
	}
	filepath.WalkDir(h.ws, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "ran-") {
			t.Errorf("the planted %s ran (inside the sandbox): %s", kind, p)
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), "planted-secret") {
			t.Errorf("<home>/env was read into %s", p)
		}
		return nil
	})
}

// writePayload writes outside/payload.sh: it records that it ran, outside
// (in its own folder) and in the folder it runs in, and copies the crew
// home's env file to both.
func writePayload(t *testing.T, outside string) string {
	t.Helper()
	p := filepath.Join(outside, "payload.sh")
	script := "#!/bin/sh\nk=$1; shift\n" +
		"d=$(dirname \"$0\")\n" +
		"echo ran > \"$d/ran-$k\"; cat ../env ../../env >> \"$d/ran-$k\" 2>/dev/null\n" +
		"echo ran > \"ran-$k\"; cat ../env ../../env ../../../env >> \"ran-$k\" 2>/dev/null\n" +
		"cat\n" // a filter passes its input through
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// plant writes one kind of repository setting that runs payload.
func plant(t *testing.T, repo, kind, payload string) {
	t.Helper()
	git := func(args ...string) { gitOut(t, repo, args...) }
	switch kind {
	case "hook":
		for _, h := range []string{"post-checkout", "reference-transaction"} {
			os.WriteFile(filepath.Join(repo, ".git", "hooks", h), []byte("#!/bin/sh\n"+payload+" hook </dev/null\n"), 0o755)
		}
	case "filter":
		git("config", "filter.x.smudge", payload+" filter")
		git("config", "filter.x.required", "true")
		os.MkdirAll(filepath.Join(repo, ".git", "info"), 0o755)
		os.WriteFile(filepath.Join(repo, ".git", "info", "attributes"), []byte("* filter=x\n"), 0o644)
	case "fsmonitor":
		git("config", "core.fsmonitor", payload+" fsmonitor")
	case "sshCommand-gitmodules":
		git("config", "core.sshCommand", payload+" sshCommand-gitmodules")
		git("config", "submodule.recurse", "true")
		os.WriteFile(filepath.Join(repo, ".gitmodules"), []byte("[submodule \"s\"]\n\tpath = s\n\turl = ssh://git.invalid/x\n[submodule \"e\"]\n\tpath = e\n\turl = ext::"+payload+" sshCommand-gitmodules\n"), 0o644)
		head := strings.TrimSpace(gitOut(t, repo, "rev-parse", "HEAD"))
		git("update-index", "--add", "--cacheinfo", "160000,"+head+",s")
		git("update-index", "--add", "--cacheinfo", "160000,"+head+",e")
		git("add", ".gitmodules")
		git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "submodules")
	}
}
