package team_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/loop/team"
)

func silent(who, last string, msgs []llm.Message) reply { return say("ok") }

// openLead opens the lead's conversation without a turn.
func (h *harness) openLead() {
	h.t.Helper()
	conv, err := h.convs.Get(h.t.Context(), leadConv)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := conv.Append(h.t.Context(), func(st *loop.State) ([]events.Event, error) {
		return []events.Event{&events.ConversationOpened{Agent: "master", Channel: "web"}}, nil
	}); err != nil {
		h.t.Fatal(err)
	}
}

// boardEvents appends to the team's board directly, as the lead's tools do.
func (h *harness) boardEvents(evs ...events.Event) {
	h.t.Helper()
	tm, err := team.Open(h.t.Context(), h.log, leadConv)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := tm.AppendBoard(h.t.Context(), func(*team.Board, *team.Mailboxes) ([]events.Event, error) { return evs, nil }); err != nil {
		h.t.Fatal(err)
	}
}

// R-TEAM, seed 001 §7: eight teammates claim one task at once, each
// deciding on its own fold of the board (as eight processes would) over
// the real log: exactly one wins, the others are told it is no longer
// available, and the log holds one claim.
func TestClaimRaceEightClaimantsOneWinner(t *testing.T) {
	h := newHarness(t, silent)
	h.openLead()
	h.boardEvents(&events.TaskCreated{TaskID: "task_0000aaaa", Subject: "config"})
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []string
		losers  []string
	)
	folds := make([]*team.Team, 8)
	for i := range folds {
		tm, err := team.Open(t.Context(), h.log, leadConv)
		if err != nil {
			t.Fatal(err)
		}
		folds[i] = tm
	}
	start := make(chan struct{})
	for i, tm := range folds {
		owner := fmt.Sprintf("m%d", i)
		wg.Go(func() {
			<-start
			_, err := h.rt.Claim(t.Context(), tm, "task_0000aaaa", owner, "claim")
			mu.Lock()
			defer mu.Unlock()
			var ref *team.Refusal
			switch {
			case err == nil:
				winners = append(winners, owner)
			case errors.As(err, &ref) && strings.Contains(ref.Text, "no longer available"):
				losers = append(losers, owner)
			default:
				t.Errorf("%s: %v", owner, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if len(winners) != 1 || len(losers) != 7 {
		t.Fatalf("winners %v, losers %v: want exactly one winner", winners, losers)
	}
	b := h.board()
	if got := b.Tasks["task_0000aaaa"]; got.Owner != winners[0] || got.Status != events.TaskInProgress {
		t.Fatalf("task %+v, want owned by %s in progress", got, winners[0])
	}
	envs, _ := h.log.ReadAll(t.Context(), events.Team(leadConv).Filter(), 0)
	claims := 0
	for _, env := range envs {
		if env.Type == events.TypeTaskClaimed {
			claims++
		}
	}
	if claims != 1 {
		t.Fatalf("%d task_claimed events stored, want 1", claims)
	}
}

// Seed 001 §7: a blocked task cannot be claimed; a teammate completes its
// current task before claiming another; a failed completion keeps the
// assignment (seed 001 §9).
func TestClaimRulesBlockedOneAtATimeFailedCompletionKeeps(t *testing.T) {
	h := newHarness(t, silent)
	h.openLead()
	h.boardEvents(
		&events.TaskCreated{TaskID: "task_0000000a", Subject: "a"},
		&events.TaskCreated{TaskID: "task_0000000b", Subject: "b"},
		&events.TaskCreated{TaskID: "task_0000000c", Subject: "c"},
		&events.TaskUpdated{TaskID: "task_0000000c", AddBlockedBy: []string{"task_0000000a"}},
	)
	tm, _ := team.Open(t.Context(), h.log, leadConv)
	refusal := func(err error) string {
		var ref *team.Refusal
		if !errors.As(err, &ref) {
			t.Fatalf("want a refusal, got %v", err)
		}
		return ref.Text
	}
	if _, err := h.rt.Claim(t.Context(), tm, "task_0000000c", "alice", "claim"); !strings.Contains(refusal(err), "blocked by") {
		t.Fatalf("blocked claim: %v", err)
	}
	dir, err := h.rt.Claim(t.Context(), tm, "task_0000000a", "alice", "claim")
	if err != nil || dir != h.ws {
		t.Fatalf("claim a: %q %v, want the team's workspace %s", dir, err, h.ws)
	}
	if _, err := h.rt.Claim(t.Context(), tm, "task_0000000b", "alice", "claim"); !strings.Contains(refusal(err), "complete your current task task_0000000a first") {
		t.Fatalf("second claim: %v", err)
	}
	b := h.board()
	if b.Tasks["task_0000000b"].Status != events.TaskPending || b.Members["alice"].WorkVersion != 1 {
		t.Fatalf("a refused claim changed the board: %+v %+v", b.Tasks["task_0000000b"], b.Members["alice"])
	}
}

// Only the lead changes the graph: a teammate's conversation is not
// offered create_task or the lead's other tools; its update_task may only
// give its own task back (TestTeammatesUseTheBoardAndMailMidTurn).
func TestOnlyLeadChangesTheGraph(t *testing.T) {
	h := newHarness(t, silent)
	a := h.agents["master"]
	seated, ok := h.rt.Seated(a, loop.Seat{Conversation: "web-1-t-alice", Team: leadConv, Member: "alice"})
	if !ok {
		t.Fatal("a member is seated")
	}
	for _, lead := range []string{"create_task", "spawn_teammate", "create_worktree", "propose_team", "request_shutdown", "review_plan"} {
		if slices.Contains(seated.Tools, lead) {
			t.Fatalf("member offered %s: %v", lead, seated.Tools)
		}
	}
	for _, want := range team.MemberTools {
		if !strings.Contains(strings.Join(seated.Tools, ","), want) {
			t.Fatalf("member not offered %s: %v", want, seated.Tools)
		}
	}
	if _, ok := h.rt.Seated(h.agents["coder"], loop.Seat{Conversation: "web-2", Team: "web-2"}); ok {
		t.Fatal("an agent without the lead's tools leads no team")
	}
}

// Seed 001 §11: a response of the wrong type, from someone else, or a
// second one changes nothing.
func TestProtocolWrongTypeOrDuplicateResponseChangesNothing(t *testing.T) {
	m := foldMail(t,
		&events.MailSent{From: "lead", To: "bob", Type: events.MailShutdownRequest, RequestID: "req_1", Content: "stop"},
		&events.MailSent{From: "bob", To: "lead", Type: events.MailPlanResponse, RequestID: "req_1", Status: events.ProtocolApproved},       // wrong type
		&events.MailSent{From: "alice", To: "lead", Type: events.MailShutdownResponse, RequestID: "req_1", Status: events.ProtocolApproved}, // not its target
	)
	if got := m.Requests["req_1"].Status; got != events.ProtocolPending {
		t.Fatalf("after a wrong-type and a stranger's response: %s, want pending", got)
	}
	m = foldMail(t,
		&events.MailSent{From: "lead", To: "bob", Type: events.MailShutdownRequest, RequestID: "req_1", Content: "stop"},
		&events.MailSent{From: "bob", To: "lead", Type: events.MailShutdownResponse, RequestID: "req_1", Status: events.ProtocolRejected},
		&events.MailSent{From: "bob", To: "lead", Type: events.MailShutdownResponse, RequestID: "req_1", Status: events.ProtocolApproved}, // duplicate
	)
	if got := m.Requests["req_1"].Status; got != events.ProtocolRejected {
		t.Fatalf("a duplicate response applied: %s, want rejected", got)
	}
}

func foldMail(t *testing.T, evs ...events.Event) *team.Mailboxes {
	t.Helper()
	m := &team.Mailboxes{Last: map[string]uint64{}, Box: map[string][]team.Mail{}, Requests: map[string]*team.Request{}, Reported: map[string]bool{}}
	for i, e := range evs {
		env := events.MustNew(e)
		env.Seq = uint64(i + 1)
		if err := m.Apply(env); err != nil {
			t.Fatal(err)
		}
	}
	return m
}
