package events_test

import (
	"errors"
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

// An append asked again after its acknowledgement was lost is recognised
// as stored even when more was stored behind it meanwhile: the worker is
// kicked by the stored message itself and may have started its pass
// (run_started) before the inbound's slow acknowledgement timed out.
// Under a 10,000 burst at load 48 that refusal reached 227 clients as a
// conflict for messages stored and answered.
func TestAppendRetriedAfterMoreWasStoredBehindItIsRecognised(t *testing.T) {
	_, log := eventstest.Start(t)
	ctx := t.Context()
	scope := events.Conv("c1")
	opened, err := log.Append(ctx, scope, 0, events.MustNew(&events.ConversationOpened{Agent: "master", Channel: "web"}))
	if err != nil {
		t.Fatal(err)
	}
	msg := events.MustNew(&events.MessageReceived{Channel: "web", Text: "once"})
	first, err := log.Append(ctx, scope, opened[0].Seq, msg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := log.Append(ctx, events.Conv("c2"), 0, events.MustNew(&events.MessageReceived{Channel: "web", Text: "other"})); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Append(ctx, scope, first[0].Seq, events.MustNew(&events.RunStarted{RunID: "r1"})); err != nil {
		t.Fatal(err)
	}
	again, err := log.Append(ctx, scope, opened[0].Seq, msg)
	if err != nil || len(again) != 1 || again[0].Seq != first[0].Seq {
		t.Fatalf("the same message again: %v, %v; want it at seq %d", again, err, first[0].Seq)
	}
	// Another event with the same expectation is a real conflict.
	if _, err := log.Append(ctx, scope, opened[0].Seq, events.MustNew(&events.MessageReceived{Channel: "web", Text: "late"})); !errors.Is(err, events.ErrConflict) {
		t.Fatalf("a different event on a stale expectation: %v, want a conflict", err)
	}
	if all, _ := log.ReadAll(ctx, scope.Filter(), 0); len(all) != 3 {
		t.Fatalf("%d events stored, want 3", len(all))
	}
}
