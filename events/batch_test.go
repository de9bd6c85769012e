package events_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// One decision, one atomic write (issue 12 item 5, ADR 0005): on a
// cluster the events of one Append are stored all or none — a decision
// whose last event cannot be stored leaves nothing of it — with their
// sequences in order after the expectation, which is checked once: a stale
// one stores nothing. A history written one event at a time, as before,
// reads alike. On the embedded server appends stay one message each: the
// decision's first event stays stored.
func TestAppendOfOneDecisionIsAtomic(t *testing.T) {
	t.Run("cluster", func(t *testing.T) {
		c := eventstest.StartCluster(t, 3)
		nc, err := events.Connect(events.ClientConfig{URL: c.URL()})
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		log, err := events.Open(t.Context(), nc, nil)
		if err != nil {
			t.Fatal(err)
		}
		appendDecisions(t, log, true)
	})
	t.Run("embedded", func(t *testing.T) {
		_, log := eventstest.Start(t)
		appendDecisions(t, log, false)
	})
}

func appendDecisions(t *testing.T, log *events.Log, atomic bool) {
	ctx := t.Context()
	c := events.Conv("c1")
	msg := func(text string) events.Envelope {
		return events.MustNew(&events.MessageReceived{Channel: "web", Text: text})
	}

	// The old way: one event per append.
	var old []events.Envelope
	var last uint64
	for _, text := range []string{"a", "b"} {
		stored, err := log.Append(ctx, c, last, msg(text))
		if err != nil {
			t.Fatal(err)
		}
		old, last = append(old, stored...), stored[0].Seq
	}

	decision, err := log.Append(ctx, c, last, msg("c"), msg("d"), msg("e"))
	if err != nil {
		t.Fatal(err)
	}
	for i, env := range decision {
		if env.Seq != last+1+uint64(i) || env.Subject != c.Subject(events.TypeMessageReceived) {
			t.Fatalf("event %d of the decision stored as %s seq %d; want seq %d", i, env.Subject, env.Seq, last+1+uint64(i))
		}
	}
	last = decision[2].Seq

	// The last event too large to store: none of the decision is (on the
	// embedded server, its first event is).
	huge := msg(strings.Repeat("x", int(log.JetStream().Conn().MaxPayload())))
	partial, err := log.Append(ctx, c, last, msg("f"), huge)
	if err == nil {
		t.Fatal("a decision with an event over the payload limit was stored")
	}
	if !atomic {
		if len(partial) != 1 {
			t.Fatalf("one at a time: %d stored of the refused decision, want its first", len(partial))
		}
		decision, last = append(decision, partial...), partial[0].Seq
	}
	// A stale expectation: none of it is.
	if _, err := log.Append(ctx, c, old[0].Seq, msg("g"), msg("h")); !errors.Is(err, events.ErrConflict) {
		t.Fatalf("stale expectation: %v, want ErrConflict", err)
	}

	all, err := log.ReadAll(ctx, c.Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := append(old, decision...)
	if len(all) != len(want) {
		t.Fatalf("read %d events, want the %d of both histories and nothing of the refused decisions", len(all), len(want))
	}
	for i, env := range all {
		if env.ID != want[i].ID || env.Seq != want[i].Seq || string(env.Data) != string(want[i].Data) || !env.Time.Equal(want[i].Time) {
			t.Errorf("event %d read as %s seq %d, stored as %s seq %d", i, env.ID, env.Seq, want[i].ID, want[i].Seq)
		}
	}
}
