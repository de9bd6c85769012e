package scheduler

import (
	"context"
	"slices"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/projections/projectionstest"
)

// The day end settles an idle conversation with nothing queued; a closed
// one, one with a message waiting, and a lead whose team is busy are not;
// a conversation of no day is settled whatever its team does (R-TEAM).
func TestDayEndListSettlesIdleConversationsButBusyLeads(t *testing.T) {
	ctx := t.Context()
	log, db, runner := projectionstest.Start(t)
	add := func(id string, evs ...events.Event) { projectionstest.Append(t, log, runner, events.Conv(id), evs...) }
	const day = "2026-12-01"
	add("idle", &events.ConversationOpened{Agent: "master", Channel: "web", Day: day})
	add("lead", &events.ConversationOpened{Agent: "master", Channel: "web", Day: day})
	add("noday", &events.ConversationOpened{Agent: "master", Channel: "api"})
	add("closed", &events.ConversationOpened{Agent: "master", Channel: "web", Day: day}, &events.ConversationClosed{Reason: "done"})
	add("waiting", &events.ConversationOpened{Agent: "master", Channel: "web", Day: day}, &events.MessageReceived{Channel: "web", Text: "hi"})
	busy := func(_ context.Context, id string) bool { return id == "lead" || id == "noday" }
	list, err := DayEndList(db, busy)(ctx)
	if err != nil {
		t.Fatal(err)
	}
	settled := map[string]bool{}
	for _, c := range list {
		settled[c.ID] = c.Settled
		if c.ID == "idle" && (c.Channel != "web" || c.Day != day) {
			t.Errorf("idle listed as %+v, want channel web, day %s", c, day)
		}
	}
	want := map[string]bool{"idle": true, "lead": false, "noday": true, "closed": false, "waiting": false}
	for id, w := range want {
		if got, ok := settled[id]; !ok || got != w {
			t.Errorf("%s: settled %v (listed %v), want %v", id, got, ok, w)
		}
	}
}

// The sweeps are the approval expiry and the day end; on a cluster the
// budget sweep too.
func TestSweepsAddTheBudgetSweepOnACluster(t *testing.T) {
	names := func(s Sweeps) (out []string) {
		for _, p := range s.Periodic() {
			out = append(out, p.Name)
		}
		return out
	}
	if got, want := names(Sweeps{}), []string{"approval-expiry", "day-end"}; !slices.Equal(got, want) {
		t.Errorf("alone: %v, want %v", got, want)
	}
	if got, want := names(Sweeps{Cluster: true}), []string{"approval-expiry", "day-end", "budget-sweep"}; !slices.Equal(got, want) {
		t.Errorf("on a cluster: %v, want %v", got, want)
	}
}
