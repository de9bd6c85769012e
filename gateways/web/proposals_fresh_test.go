package web_test

import (
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/projections/projectionstest"
)

// A proposal stored is listed, read and shown on /memory by the next
// request, though the projections may still hold it in an open batch
// (up to 50 ms): the memory views wait for what the log held when asked,
// as the other views do. Without the wait each read came too soon.
func TestMemoryViewsReadWhatWasStoredBeforeThem(t *testing.T) {
	ctx := t.Context()
	log, db, runner := projectionstest.Start(t)
	m := &web.Memory{DB: db, Fresh: runner, Log: log, Location: time.UTC}
	for i, id := range []string{"p1", "p2", "p3"} {
		if _, err := log.Append(ctx, events.Agent("pong"), events.Any, events.MustNew(&events.MemoryProposed{ProposalID: id, Agent: "pong",
			Old: "a\n", New: "a\nb\n", Days: []string{"2026-12-01"}, Kind: events.ProposalAddOnly, Trigger: "job"})); err != nil {
			t.Fatal(err)
		}
		var n int
		switch i {
		case 0:
			got, err := m.Proposals(ctx, "pong")
			if err != nil {
				t.Fatal(err)
			}
			n = len(got.([]web.Proposal))
		case 1:
			if _, err := m.Proposal(ctx, id); err != nil {
				t.Fatalf("GET /api/memory/proposals/%s right after it was stored: %v", id, err)
			}
			n = 2
		case 2:
			rows, err := m.Rows(ctx, "pong")
			if err != nil {
				t.Fatal(err)
			}
			n = len(rows)
		}
		if n != i+1 {
			t.Errorf("read %d of the %d proposals stored", n, i+1)
		}
	}
}
