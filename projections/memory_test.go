package projections

import (
	"errors"
	"slices"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

func TestMemoryProposals(t *testing.T) {
	_, log := eventstest.Start(t)
	s := newSeeder(t, log)
	pong, coach := events.Agent("pong"), events.Agent("coach")
	days := []string{"2026-11-29", "2026-11-30"}

	s.add(pong, &events.MemoryProposed{ProposalID: "p1", Agent: "pong", Old: "a\n", New: "a\nb\n", Days: days, Kind: events.ProposalAddOnly, Trigger: "job", Route: "fake:echo", CostUSD: cost(0)})
	s.add(pong, &events.MemoryProposalDecided{ProposalID: "p1", Decision: events.ProposalAutoApplied})
	s.add(coach, &events.MemoryProposed{ProposalID: "p2", Agent: "coach", Old: "x\n", New: "", Days: days[1:], Kind: events.ProposalRemoval, Reason: "removes 1 line", Trigger: "cli"})
	s.add(pong, &events.MemoryProposed{ProposalID: "p3", Agent: "pong", Old: "a\nb\n", New: "c\n", Days: days, Kind: events.ProposalChange, Trigger: "api"})
	s.add(pong, &events.MemoryProposalDecided{ProposalID: "p3", Decision: events.ProposalRejected, Channel: "web"})
	s.add(pong, &events.MemoryProposalDecided{ProposalID: "p3", Decision: events.ProposalApproved, Channel: "api"}) // late: the first stands
	s.add(pong, &events.MemoryRolledBack{ProposalID: "p1", Channel: "api"})
	s.add(pong, &events.MemoryRolledBack{ProposalID: "p3", Channel: "api"})               // not applied: ignored
	s.add(pong, &events.MemoryProposalDecided{ProposalID: "ghost", Decision: "approved"}) // unknown: ignored
	s.conv("c1", &events.MessageReceived{Channel: "web", Text: "not memory"})

	db := openDB(t, "")
	if err := Rebuild(t.Context(), log, db, Memory{}); err != nil {
		t.Fatal(err)
	}
	all, err := ListProposals(db, "")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range all {
		ids = append(ids, p.ID)
	}
	if want := []string{"p3", "p2", "p1"}; !slices.Equal(ids, want) {
		t.Fatalf("ListProposals = %v, want newest first %v", ids, want)
	}
	pongs, err := ListProposals(db, "pong")
	if err != nil || len(pongs) != 2 || pongs[0].ID != "p3" || pongs[1].ID != "p1" {
		t.Fatalf("ListProposals(pong) = %+v, %v", pongs, err)
	}

	p1 := pongs[1]
	if p1.Status != ProposalRolledBack || !p1.Auto || p1.Decision != events.ProposalAutoApplied || p1.Decided == nil ||
		p1.RolledBack == nil || p1.RollbackChannel != "api" || p1.Old != "a\n" || p1.New != "a\nb\n" || !slices.Equal(p1.Days, days) ||
		p1.CostUSD == nil || *p1.CostUSD != 0 || p1.Route != "fake:echo" || p1.Trigger != "job" {
		t.Errorf("p1 = %+v", p1)
	}
	p3 := pongs[0]
	if p3.Status != ProposalRejected || p3.Auto || p3.Decision != events.ProposalRejected || p3.DecisionChannel != "web" || p3.RolledBack != nil {
		t.Errorf("p3 = %+v", p3)
	}
	p2, err := GetProposal(db, "p2")
	if err != nil {
		t.Fatal(err)
	}
	if p2.Status != ProposalPending || p2.Agent != "coach" || p2.Kind != events.ProposalRemoval || p2.Reason != "removes 1 line" || p2.New != "" || p2.Decided != nil {
		t.Errorf("p2 = %+v", p2)
	}
	if _, err := GetProposal(db, "ghost"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetProposal(ghost) = %v, want ErrNotFound", err)
	}

	// Live application (one transaction per event, next to every other
	// projection) writes the same bytes as the rebuild.
	live := openDB(t, "")
	r := startRunner(t, log, live, config{})
	last, err := log.Last(t.Context(), events.Root+".>")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WaitFor(testCtx(t), last); err != nil {
		t.Fatal(err)
	}
	want, _ := Dump(db, Memory{})
	got, _ := Dump(live, Memory{})
	if string(got) != string(want) {
		t.Errorf("live dump differs from rebuild:\n got %s\nwant %s", got, want)
	}
}
