package team_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/team"
)

// twoTeams is a runtime over a log holding teams lead-a and lead-b,
// keeping at most one fold: lead-b has a member, ann, with a pending
// shutdown request; lead-a is what board writes.
func twoTeams(t *testing.T, board func(id string) []events.Event) (*team.Runtime, *events.Log, *loop.Convs) {
	t.Helper()
	ctx := context.Background()
	_, log := eventstest.Start(t)
	convs := loop.NewConvs(log, nil)
	rt := team.New(team.Config{Log: log, Convs: convs, Crew: loop.Agents(map[string]loop.Agent{"coder": {ID: "coder"}})})
	t.Cleanup(rt.Close)
	team.SetMaxTeams(rt, 1)
	for _, id := range []string{"lead-a", "lead-b"} {
		tm, err := team.Open(ctx, log, id)
		if err != nil {
			t.Fatal(err)
		}
		evs := board(id)
		if id == "lead-b" {
			evs = []events.Event{&events.TeamConfirmed{ProposalID: "prop_1", Plan: "p"}}
		}
		if _, err := tm.AppendBoard(ctx, func(*team.Board, *team.Mailboxes) ([]events.Event, error) { return evs, nil }); err != nil {
			t.Fatal(err)
		}
	}
	tb, err := team.Open(ctx, log, "lead-b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Send(ctx, "ann", func(*team.Board, *team.Mailboxes) ([]events.Event, error) {
		return []events.Event{&events.MailSent{From: team.Lead, To: "ann", Type: events.MailShutdownRequest, RequestID: "req_1", Content: "stop"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return rt, log, convs
}

// A call that opens a fold past the bound does not wait for the trim:
// the trim runs on the runtime's own context, so a slow one (many busy
// teams, each read) cannot spend the 10 s of a Stop, Workdir or Prompt
// — Stop answered "" and Workdir "no claimed task". Here the trim is held
// on lead-a's fold while Stop asks about lead-b's member.
func TestTeamCallDoesNotWaitOnTheTrim(t *testing.T) {
	rt, _, _ := twoTeams(t, func(string) []events.Event {
		return []events.Event{&events.TeamConfirmed{ProposalID: "prop_1", Plan: "p"}}
	})
	ctx := context.Background()
	ta, err := rt.Team(ctx, "lead-a")
	if err != nil {
		t.Fatal(err)
	}
	holding, release := make(chan struct{}), make(chan struct{})
	var released sync.Once
	free := func() { released.Do(func() { close(release) }) }
	defer free()
	go ta.View(ctx, func(*team.Board, *team.Mailboxes) { close(holding); <-release })
	<-holding
	answer := make(chan string, 1)
	go func() {
		answer <- rt.Stop(loop.Seat{Team: "lead-b", Member: "ann", Conversation: team.MemberConversation("lead-b", "ann")})
	}()
	var got string
	select {
	case got = <-answer:
	case <-time.After(30 * time.Second):
		free()
		got = <-answer
		t.Errorf("Stop waited for the trim of another team's fold (answered %q once it was let go on)", got)
	}
	free()
	if want := "the lead asked this teammate to shut down (request req_1)"; got != want {
		t.Errorf("Stop = %q, want %q", got, want)
	}
	eventstest.Eventually(t, "the trim let lead-a go", func() bool {
		return rt.Idle() && slices.Equal(team.Kept(rt), []string{"lead-b"})
	})
}

// A team whose only ready task has a broken worktree binding is judged
// idle and let go: no pass would claim that task (fail closed), and
// mending the binding is an event of the team, which opens the fold
// again. A ready task a pass would claim keeps the team.
func TestTeamWithOnlyABrokenBindingReadyIsLetGo(t *testing.T) {
	good := filepath.Join(t.TempDir(), "wt")
	os.MkdirAll(good, 0o700)
	os.WriteFile(filepath.Join(good, ".git"), []byte("gitdir: elsewhere\n"), 0o600)
	for _, c := range []struct {
		name, path string
		kept       string
	}{
		{"broken binding", filepath.Join(t.TempDir(), "gone"), "lead-b"},
		{"claimable", good, "lead-a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			rt, _, convs := twoTeams(t, func(id string) []events.Event {
				return []events.Event{&events.TeamConfirmed{ProposalID: "prop_1", Members: []events.TeamMember{{Name: "ann", Agent: "coder"}}, Plan: "p"},
					&events.TeammateSpawned{Name: "ann", Agent: "coder", Conversation: team.MemberConversation(id, "ann")},
					&events.TaskCreated{TaskID: "t1", Subject: "build it"},
					&events.TaskWorktreeBound{TaskID: "t1", Name: "wt", Path: c.path, Branch: "b"}}
			})
			// Ann's conversation is open and idle: nothing but the ready
			// task could keep the team.
			conv, err := convs.Get(ctx, team.MemberConversation("lead-a", "ann"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conv.Append(ctx, func(*loop.State) ([]events.Event, error) {
				return []events.Event{&events.ConversationOpened{Agent: "coder", Channel: team.Channel, Team: "lead-a", Member: "ann", ParentConversation: "lead-a"}}, nil
			}); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"lead-a", "lead-b"} {
				if _, err := rt.Team(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			eventstest.Eventually(t, "the trim done", rt.Idle)
			if got := team.Kept(rt); !slices.Equal(got, []string{c.kept}) {
				t.Errorf("kept %v, want [%s]", got, c.kept)
			}
		})
	}
}
