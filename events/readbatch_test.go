package events_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// A read asks the server for no more events than its filter has left: the
// first batch is one event, whose answer says how many are left, and no
// later batch asks for more. Asked for more than is left, the server
// looks for the next match to the end of the stream, through every
// message stored after the conversation's last: in a 10,000-conversation
// burst those direct gets held the crew's connection for seconds each.
// The reads go on the log's reader connection, not on the one appends use.
func TestReadAsksNoMoreThanIsLeft(t *testing.T) {
	srv, log := eventstest.Start(t)
	ctx := t.Context()
	a, b := events.Conv("a"), events.Conv("b")
	var lastA, lastB uint64
	for range 700 { // interleaved, more than one batch (512)
		got, err := log.Append(ctx, a, lastA, msg("a"))
		if err != nil {
			t.Fatal(err)
		}
		lastA = got[0].Seq
		if got, err = log.Append(ctx, b, lastB, msg("b")); err != nil {
			t.Fatal(err)
		}
		lastB = got[0].Seq
	}
	watch, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	// Synchronous: once watch's Flush is answered, every request the
	// server took before it is in the subscription's channel.
	sub, err := watch.SubscribeSync("$JS.API.DIRECT.GET." + events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	readFrom := func(from uint64) int {
		t.Helper()
		got, err := log.ReadAll(ctx, a.Filter(), from)
		if err != nil {
			t.Fatal(err)
		}
		if err := watch.Flush(); err != nil {
			t.Fatal(err)
		}
		pending, _, _ := sub.Pending()
		asked := 0
		var batches []int
		for range pending {
			m, err := sub.NextMsg(time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var req struct {
				Batch int `json:"batch"`
			}
			if err := json.Unmarshal(m.Data, &req); err != nil {
				t.Fatal(err)
			}
			asked += req.Batch
			batches = append(batches, req.Batch)
		}
		if asked != max(len(got), 1) { // nothing left: the one event of the first batch
			t.Fatalf("reading %d events from %d asked for %d in batches %v", len(got), from, asked, batches)
		}
		return len(got)
	}
	if n := readFrom(0); n != 700 {
		t.Fatalf("read %d events of a, want 700", n)
	}
	if n := readFrom(lastA - 20); n != 11 { // a tail: every other message is b's
		t.Fatalf("read %d events of a's tail, want 11", n)
	}
	if n := readFrom(lastA + 1); n != 0 {
		t.Fatalf("read %d events after a's last", n)
	}
}
