package events_test

import (
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// R-ES-8: an append asked again after its acknowledgement was lost (a
// stream leader died between storing and answering) is answered as the
// same event at the same sequence, not stored twice and not refused as a
// conflict: Append may retry a publish nobody answered.
func TestAppendRetriedAfterLostAckIsStoredOnce(t *testing.T) {
	_, log := eventstest.Start(t)
	ctx := t.Context()
	env := events.MustNew(&events.MessageReceived{Channel: "web", Text: "once"})
	first, err := log.Append(ctx, events.Conv("c1"), 0, env)
	if err != nil {
		t.Fatal(err)
	}
	again, err := log.Append(ctx, events.Conv("c1"), 0, env)
	if err != nil || len(again) != 1 || again[0].Seq != first[0].Seq {
		t.Fatalf("the same event again: %v, %v; want it at seq %d", again, err, first[0].Seq)
	}
	all, _ := log.ReadAll(ctx, events.Conv("c1").Filter(), 0)
	if len(all) != 1 {
		t.Fatalf("%d events stored, want 1", len(all))
	}
}
