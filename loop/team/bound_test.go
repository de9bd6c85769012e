package team_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/team"
)

// folds is team id's board and mailboxes as a fold of its own reads them
// from the log, or as rt keeps them (rt non-nil).
func folds(t *testing.T, log *events.Log, rt *team.Runtime, id string) (team.Board, team.Mailboxes) {
	t.Helper()
	var tm *team.Team
	var err error
	if rt != nil {
		tm, err = rt.Team(context.Background(), id)
	} else {
		tm, err = team.Open(context.Background(), log, id)
	}
	if err != nil {
		t.Fatal(err)
	}
	var b team.Board
	var mb team.Mailboxes
	tm.View(context.Background(), func(bd *team.Board, m *team.Mailboxes) { b, mb = *bd, *m })
	return b, mb
}

// Issue 30: the runtime keeps at most its bound of teams' folds, letting
// go of the least recently used idle one; a team let go is opened again
// from the log with the same board and mailboxes, and its member's
// conversation events still reach it (its finished run is reported to the
// lead, which only a pass over the team does).
func TestTeamFoldsStayAtTheirBound(t *testing.T) {
	const n = 4
	h := newHarness(t, silent)
	team.SetMaxTeams(h.rt, n)
	ctx := context.Background()
	var ids []string
	for i := range n + 1 {
		id := fmt.Sprintf("lead-%d", i)
		ids = append(ids, id)
		tm, err := team.Open(ctx, h.log, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tm.AppendBoard(ctx, func(*team.Board, *team.Mailboxes) ([]events.Event, error) {
			return []events.Event{&events.TeamConfirmed{ProposalID: "prop_1", Members: []events.TeamMember{{Name: "ann", Agent: "coder"}}, Plan: "p"},
				&events.TeammateSpawned{Name: "ann", Agent: "coder", Conversation: team.MemberConversation(id, "ann")}}, nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := tm.Send(ctx, "ann", func(*team.Board, *team.Mailboxes) ([]events.Event, error) {
			return []events.Event{&events.MailSent{From: team.Lead, To: "ann", Type: events.MailMessage, Content: "hello " + id}}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	reported := func(id string) int {
		_, mb := folds(t, h.log, nil, id)
		return len(mb.Reported)
	}
	h.quiet("every member ran and was reported", func() bool {
		for _, id := range ids {
			if reported(id) == 0 {
				return false
			}
		}
		return len(team.Kept(h.rt)) <= n
	})
	kept := team.Kept(h.rt)
	if len(kept) != n {
		t.Fatalf("kept %v, want %d of %v", kept, n, ids)
	}
	var gone string
	for _, id := range ids {
		if !slices.Contains(kept, id) {
			gone = id
		}
	}
	wantB, wantM := folds(t, h.log, nil, gone)
	gotB, gotM := folds(t, h.log, h.rt, gone)
	if !reflect.DeepEqual(gotB, wantB) || !reflect.DeepEqual(gotM, wantM) {
		t.Fatalf("team %s opened again:\n%+v\n%+v\nwant\n%+v\n%+v", gone, gotB, gotM, wantB, wantM)
	}
	if len(gotB.Roster) != 1 || len(gotM.Box["ann"]) != 1 || len(gotM.Box[team.Lead]) == 0 {
		t.Fatalf("team %s opened again: roster %v, mail %v", gone, gotB.Roster, gotM.Box)
	}
	h.quiet("back at the bound", func() bool { return len(team.Kept(h.rt)) == n })
	kept = team.Kept(h.rt)
	if !slices.Contains(kept, gone) {
		t.Fatalf("the team used last (%s) was let go: kept %v", gone, kept)
	}
	for _, id := range ids {
		if !slices.Contains(kept, id) {
			gone = id
		}
	}
	// A run of the let-go team's member that no turn of this process ran
	// (another process's, before a failover): its run_finished is routed
	// to the team by the member's seat.
	before := reported(gone)
	member := team.MemberConversation(gone, "ann")
	conv, err := h.convs.Get(ctx, member)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conv.Append(ctx, func(*loop.State) ([]events.Event, error) {
		return []events.Event{&events.RunStarted{RunID: "run_elsewhere", Agent: "coder", Trigger: "message"},
			&events.RunFinished{RunID: "run_elsewhere", Status: events.RunDone}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	eventstest.Eventually(t, "the let-go team's member run reported", func() bool { return reported(gone) > before })
	h.quiet("back at the bound", func() bool { return len(team.Kept(h.rt)) == n })
}
