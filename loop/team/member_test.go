package team_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/loop/team"
)

// waitFor polls cond for up to 10 s from inside a scripted model call.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

// framedMail reports whether msgs carry want inside a team frame, in a
// message that is not the owner's.
func framedMail(msgs []llm.Message, want string) bool {
	for _, m := range msgs[1:] {
		if s := text(m); m.Role == llm.RoleUser && strings.HasPrefix(s, loop.TeamFrame) && strings.Contains(s, want) {
			return true
		}
	}
	return false
}

// Teammates use their own tools (issue 26): alice reads the board
// (list_tasks, get_task), the roster (list_teammates), is refused a graph
// change (update_task addBlockedBy) and writes to bob and the lead
// (send_message); her mail reaches bob inside his running turn, before his
// next model call, framed as team events; the lead's request_shutdown
// stops bob at his next step boundary, not at the end of his run.
func TestTeammatesUseTheBoardAndMailMidTurn(t *testing.T) {
	var h *harness
	var asked atomic.Bool
	var bobSaw atomic.Bool
	var bobCalls atomic.Int32
	var mu sync.Mutex
	aliceStep := 0
	lead := func(last string, msgs []llm.Message) reply {
		switch {
		case strings.HasPrefix(last, loop.TeamFrame) && strings.Contains(last, "hello lead from alice") && asked.CompareAndSwap(false, true):
			waitFor(bobSaw.Load) // bob reads alice's mail in his running turn first
			return use("request_shutdown", args("name", "bob", "reason", "alice has it covered"))
		case strings.Contains(last, "Split the work"):
			return use("propose_team", args("members", []map[string]string{
				{"name": "alice", "agent": "master", "responsibility": "config"},
				{"name": "bob", "agent": "coder", "responsibility": "auth"}}, "plan", "two in parallel"))
		case strings.HasPrefix(last, "The owner confirmed"):
			return uses(tc("create_task", args("subject", "config")), tc("create_task", args("subject", "auth")))
		case strings.HasPrefix(last, "Created") && taskIn(msgs, "auth") != "" && !strings.Contains(allText(msgs), "Spawned"):
			return uses(tc("spawn_teammate", args("name", "alice", "task_id", taskIn(msgs, "config"))),
				tc("spawn_teammate", args("name", "bob", "task_id", taskIn(msgs, "auth"))))
		}
		return say("lead: noted.")
	}
	alice := func(last string, msgs []llm.Message) reply {
		mu.Lock()
		step := aliceStep
		aliceStep++
		mu.Unlock()
		task := ""
		if m := taskRe.FindStringSubmatch(allText(msgs)); m != nil {
			task = m[1]
		}
		switch step {
		case 0:
			return use("list_tasks", args())
		case 1:
			return use("get_task", args("task_id", task))
		case 2:
			return use("list_teammates", args())
		case 3:
			return use("update_task", args("task_id", task, "addBlockedBy", []string{task}))
		case 4:
			return use("send_message", args("to", "bob", "content", "hello bob from alice"))
		case 5:
			return use("send_message", args("to", "lead", "content", "hello lead from alice"))
		case 6:
			return use("complete_task", args("task_id", task, "result", "config cleaned"))
		}
		return say("alice: done.")
	}
	bobMail := func(typ string) bool {
		for _, m := range h.mail("bob") {
			if m.Type == typ {
				return true
			}
		}
		return false
	}
	bob := func(last string, msgs []llm.Message) reply {
		n := bobCalls.Add(1)
		switch {
		case framedMail(msgs, "hello bob from alice"):
			if bobSaw.CompareAndSwap(false, true) {
				waitFor(func() bool { return bobMail(events.MailShutdownRequest) })
			}
		case n >= 2:
			waitFor(func() bool { return bobMail(events.MailMessage) })
			time.Sleep(50 * time.Millisecond)
		}
		return use("workspace_list", args("path", "."))
	}
	h = newHarness(t, func(who, last string, msgs []llm.Message) reply {
		switch who {
		case team.Lead:
			return lead(last, msgs)
		case "alice":
			return alice(last, msgs)
		}
		return bob(last, msgs)
	})
	h.send("Split the work between two teammates.")
	h.approve()
	bobConv := team.MemberConversation(leadConv, "bob")
	aliceConv := team.MemberConversation(leadConv, "alice")
	h.quiet("bob stopped", func() bool {
		m := h.board().Members["bob"]
		return m != nil && m.Stopped
	})

	for _, tool := range []string{"list_tasks", "get_task", "list_teammates", "send_message"} {
		for _, r := range h.results(aliceConv, tool) {
			if r.IsError || strings.Contains(r.Output, "not on a team") {
				t.Errorf("alice's %s: %q", tool, r.Output)
			}
		}
	}
	if out := h.lastResult(aliceConv, "list_teammates"); !strings.Contains(out, "bob (agent coder)") {
		t.Errorf("alice's list_teammates: %q", out)
	}
	if out := h.lastResult(aliceConv, "update_task"); !strings.Contains(out, "only the lead changes the task graph") {
		t.Errorf("alice's graph change: %q", out)
	}
	if !bobSaw.Load() {
		t.Fatal("alice's mail never reached bob's running turn")
	}
	// bob read it within one run: the steer applied between two steps of
	// the run his assignment opened, and that run ended at a step boundary
	// on the shutdown request, well before max_steps.
	envs, _ := h.log.ReadAll(t.Context(), events.Conv(bobConv).Filter(), 0)
	runs, steered := map[string]bool{}, 0
	var end *events.RunFinished
	for _, env := range envs {
		e, _ := env.Decode()
		switch e := e.(type) {
		case *events.RunStarted:
			runs[e.RunID] = true
		case *events.SteerReceived:
			if e.Team != nil {
				steered++
			}
		case *events.RunFinished:
			if end == nil {
				end = e
			}
		}
	}
	if steered == 0 || end == nil || end.Reason != "shutdown" || len(runs) != 1 {
		t.Fatalf("bob: %d team steers, %d runs, first end %+v; want mail in the running turn and a stop at the boundary", steered, len(runs), end)
	}
	if n := bobCalls.Load(); n >= 12 {
		t.Errorf("bob made %d model calls: the shutdown waited for max_steps", n)
	}
	for _, m := range h.state(bobConv).Messages {
		if strings.Contains(m.Text, "hello bob from alice") && (!m.Team || m.Said != "") {
			t.Errorf("alice's mail in bob's history as %+v, want team events", m)
		}
	}
	var answered bool
	for _, m := range h.mail(team.Lead) {
		if m.From == "bob" && m.Type == events.MailShutdownResponse && m.Status == events.ProtocolApproved {
			answered = true
		}
	}
	if !answered {
		t.Error("bob did not answer the shutdown request")
	}
	if !framedMail(h.model.calls(team.Lead)[len(h.model.calls(team.Lead))-1], "hello lead from alice") {
		t.Error("the lead did not read alice's message framed")
	}
}
