package team_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
)

// gitRepo makes dir a repository with one commit.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	os.WriteFile(filepath.Join(dir, "auth.go"), []byte("package auth\n"), 0o600)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"}} {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

var createdRe = regexp.MustCompile(`Created (task_[0-9a-f]+): (\w+)`)

// taskIn finds the id create_task returned for subject in the messages.
func taskIn(msgs []llm.Message, subject string) string {
	for _, m := range msgs {
		for _, sm := range createdRe.FindAllStringSubmatch(text(m), -1) {
			if sm[2] == subject {
				return sm[1]
			}
		}
	}
	return ""
}

var taskRe = regexp.MustCompile(`\[(?:Assigned|Auto-claimed) task (task_[0-9a-f]+)\] (\w+)`)

// memberBrain does the task it was given: writes a file named after it,
// completes it and reports.
func memberBrain(who, last string, msgs []llm.Message) reply {
	if m := taskRe.FindStringSubmatch(last); m != nil {
		return uses(tc("workspace_write", args("path", m[2]+"-by-"+who+".txt", "content", "done\n")))
	}
	if strings.HasPrefix(last, "created ") {
		id := ""
		for i := len(msgs) - 1; i >= 0 && id == ""; i-- {
			if m := taskRe.FindStringSubmatch(text(msgs[i])); m != nil {
				id = m[1]
			}
		}
		return use("complete_task", args("task_id", id, "result", "Authentication refactored; related tests pass."))
	}
	if strings.HasPrefix(last, "Completed") {
		return say(who + ": done, tests pass.")
	}
	return say(who + ": nothing to do.")
}

// The seed's full run (seed 001, "Một lần chạy hoàn chỉnh"), scripted:
// the owner asks for a parallel refactor; the lead proposes and waits; the
// owner's approval is the "Go ahead"; the lead creates the tasks, links
// them, gives auth a worktree and spawns two teammates each with a claimed
// task (bob in the worktree); a completion reaches the lead as a result
// then an idle notification, which start the lead's next turn by
// themselves; the teammate idle when the blocked task becomes ready
// claims it, "[Auto-claimed task …]".
func TestSeedRunParallelRefactor(t *testing.T) {
	var h *harness
	lead := func(last string, msgs []llm.Message) reply {
		switch {
		case strings.HasPrefix(last, loop.TeamFrame):
			return say("I received the team's results and will coordinate the rest.")
		case strings.Contains(last, "Put the backend refactor"):
			return use("propose_team", args("members", []map[string]string{
				{"name": "alice", "agent": "master", "responsibility": "config: clean up configuration loading"},
				{"name": "bob", "agent": "coder", "responsibility": "auth: refactor authentication"}},
				"plan", "config and auth in parallel, then tests"))
		case strings.HasPrefix(last, "The owner confirmed"):
			return uses(tc("create_task", args("subject", "config")), tc("create_task", args("subject", "auth")), tc("create_task", args("subject", "tests")))
		case strings.HasPrefix(last, "Created") && taskIn(msgs, "tests") != "" && !strings.Contains(allText(msgs), "Updated"):
			return use("update_task", args("task_id", taskIn(msgs, "tests"), "addBlockedBy", []string{taskIn(msgs, "config"), taskIn(msgs, "auth")}))
		case strings.HasPrefix(last, "Updated"):
			return use("create_worktree", args("name", "auth-refactor", "task_id", taskIn(msgs, "auth")))
		case strings.HasPrefix(last, "Created worktree"):
			return uses(tc("spawn_teammate", args("name", "alice", "task_id", taskIn(msgs, "config"))),
				tc("spawn_teammate", args("name", "bob", "task_id", taskIn(msgs, "auth"))))
		case strings.HasPrefix(last, "Spawned"):
			return say("The team is working; I will report back.")
		}
		return say("lead: " + last)
	}
	h = newHarness(t, func(who, last string, msgs []llm.Message) reply {
		if who == "lead" {
			return lead(last, msgs)
		}
		return memberBrain(who, last, msgs)
	})
	gitRepo(t, h.ws)
	h.send("Put the backend refactor on a shared task board. Clean up configuration, authentication, and tests in parallel where possible. Use a worktree for authentication.")

	// The lead proposes and waits: nothing is spawned before the owner
	// confirms.
	h.approve()
	st := h.state(leadConv)
	if len(h.board().Roster) != 0 && st.OpenRun == "" {
		t.Fatal("spawned before the approval")
	}

	h.approve() // create_worktree asks in a supervised conversation
	h.quiet("the team's work", func() bool {
		bd := h.board()
		if len(bd.Order) != 3 {
			return false
		}
		for _, id := range bd.Order {
			if bd.Tasks[id].Status != events.TaskDone {
				return false
			}
		}
		return true
	})
	bd := h.board()
	byName := map[string]string{}
	for _, id := range bd.Order {
		byName[bd.Tasks[id].Subject] = id
	}
	if got := bd.Tasks[byName["tests"]].BlockedBy; len(got) != 2 {
		t.Fatalf("tests blocked by %v, want config and auth", got)
	}
	wt := filepath.Join(h.ws, ".worktrees", "auth-refactor")
	if w := bd.Tasks[byName["auth"]].Worktree; w == nil || w.Branch != "wt/auth-refactor" {
		t.Fatalf("auth's worktree: %+v", w)
	}
	// Each teammate worked in its claimed task's folder: bob in the
	// worktree, alice in the repository.
	if _, err := os.Stat(filepath.Join(wt, "auth-by-bob.txt")); err != nil {
		t.Fatalf("bob did not write in the worktree: %v", err)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "config-by-alice.txt")); err != nil {
		t.Fatalf("alice did not write in the repository: %v", err)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "auth-by-bob.txt")); err == nil {
		t.Fatal("bob wrote outside his worktree")
	}
	// A result, then an idle notification, for each finished run, in
	// that order.
	box := h.mail("lead")
	for _, who := range []string{"alice", "bob"} {
		var types []string
		for _, m := range box {
			if m.From == who {
				types = append(types, m.Type)
			}
		}
		if len(types) < 2 || types[0] != events.MailResult || types[1] != events.MailIdle {
			t.Fatalf("%s's mail to the lead: %v, want result then idle_notification", who, types)
		}
	}
	// The lead's later turns were started by the runtime on team events,
	// framed, never as the owner's words.
	envs, _ := h.log.ReadAll(t.Context(), events.Conv(leadConv).Filter(), 0)
	teamRuns := 0
	for _, env := range envs {
		if e, _ := env.Decode(); e != nil {
			if rs, ok := e.(*events.RunStarted); ok && rs.Trigger == "team" {
				teamRuns++
			}
		}
	}
	if teamRuns == 0 {
		t.Fatal("no lead turn was started by team events")
	}
	var framed []string
	for _, m := range h.state(leadConv).Messages {
		if m.Team {
			framed = append(framed, m.Text)
			if !strings.HasPrefix(m.Text, loop.TeamFrame) || m.Said != "" {
				t.Fatalf("team events as read by the lead: %q", m.Text)
			}
		}
	}
	if !slices.ContainsFunc(framed, func(s string) bool {
		return strings.Contains(s, "(result, task ") && strings.Contains(s, "(idle_notification)")
	}) {
		t.Fatalf("no delivery carried a result and an idle notification: %q", framed)
	}
	// The tests task became ready when config and auth were done, and the
	// teammate idle then claimed it by itself.
	auto := 0
	for _, who := range []string{"alice", "bob"} {
		auto += count(h.model.calls(who), func(s string) bool { return strings.Contains(s, "[Auto-claimed task "+byName["tests"]+"] tests") })
	}
	if auto != 1 || bd.Tasks[byName["tests"]].How != "auto" {
		t.Fatalf("tests auto-claimed %d times (how %q), want once", auto, bd.Tasks[byName["tests"]].How)
	}
}

func allText(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(text(m) + "\n")
	}
	return b.String()
}
