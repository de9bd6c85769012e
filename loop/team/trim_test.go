package team_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

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
