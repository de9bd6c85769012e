package projections

import (
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"go.etcd.io/bbolt"
)

// Issue 10 item 7 (R-X-4): a conversation's event this build cannot decode
// (a newer version) parks that conversation — status parked, naming the
// event's subject and sequence — and every projection goes on with the
// rest of the log, live and rebuilt alike, and after a restart.
func TestUndecodableConversationEventParksIt(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	s := newSeeder(t, log)
	s.conv("c1", &events.ConversationOpened{Agent: "coach", Channel: "web"})
	s.conv("c1", &events.MessageReceived{Channel: "web", Text: "one"})
	subject := events.Conv("c1").Subject(events.TypeRunStarted)
	ack, err := log.JetStream().Publish(ctx, subject,
		[]byte(`{"type":"run_started","v":9,"id":"f1","time":"2026-11-30T09:00:00Z","data":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	bad := ack.Sequence
	s.conv("c2", &events.ConversationOpened{Agent: "coach", Channel: "api"})
	last := s.conv("c2", &events.MessageReceived{Channel: "api", Text: "other"})
	db := openDB(t, "")
	for range 2 { // and again after a restart
		r := startRunner(t, log, db, config{})
		if err := r.WaitFor(ctx, last); err != nil {
			t.Fatalf("WaitFor past the undecodable event: %v", err)
		}
		for _, st := range r.Status(ctx) {
			if !st.Running || st.Error != "" || st.Checkpoint != last {
				t.Errorf("status: %+v; want running at %d", st, last)
			}
		}
		c1, err := GetConversation(db, "c1")
		if err != nil {
			t.Fatal(err)
		}
		if c1.Status != ConversationParked || c1.Parked == nil || c1.Parked.Subject != subject || c1.Parked.Seq != bad ||
			!strings.Contains(c1.Parked.Error, "newer") || c1.Messages != 1 {
			t.Errorf("c1 = %+v (parked %+v); want parked at %s seq %d", c1, c1.Parked, subject, bad)
		}
		if got := messages(t, r, "c2"); got != 1 {
			t.Errorf("c2 messages = %d, want 1: the other conversation goes on", got)
		}
		list, _ := ListConversations(db, 0)
		if len(list) != 2 {
			t.Errorf("listed %d conversations, want 2", len(list))
		}
		if err := r.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	live := dumpAll(t, db)
	for _, p := range All() {
		if err := Rebuild(ctx, log, db, p); err != nil {
			t.Fatalf("rebuild %s past the undecodable event: %v", p.Name(), err)
		}
	}
	if got := dumpAll(t, db); got != live {
		t.Errorf("rebuilt projections differ from live:\n%s", firstDiff(got, live))
	}
}

// Once a build can read an event an older one passed (the owner upgraded),
// Open rebuilds the projections: the conversation is no longer parked and
// the event shows.
func TestParkedConversationRebuiltOnceReadable(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	s := newSeeder(t, log)
	s.conv("c1", &events.ConversationOpened{Agent: "coach", Channel: "web"})
	// A message the older build could not read: recorded as it would have
	// recorded it, and not applied.
	msg := s.conv("c1", &events.MessageReceived{Channel: "web", Text: "from a newer build"})
	db := openDB(t, "")
	r := startRunner(t, log, db, config{})
	if err := r.WaitFor(ctx, msg); err != nil {
		t.Fatal(err)
	}
	r.Close(ctx)
	subject := events.Conv("c1").Subject(events.TypeMessageReceived)
	err := db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(undecodableBucket))
		if err != nil {
			return err
		}
		if err := b.Put(u64(msg), []byte(subject)); err != nil {
			return err
		}
		c := Conversation{}
		convs := tx.Bucket([]byte(bucketConversations))
		getJSON(convs, []byte("c1"), &c)
		c.Messages, c.Queued = 0, 0
		c.Parked = &ParkedEvent{Subject: subject, Seq: msg, Error: "newer version"}
		c.Status = statusOf(c)
		return (&Tx{Tx: tx}).putJSON(convs, []byte("c1"), c)
	})
	if err != nil {
		t.Fatal(err)
	}
	r = startRunner(t, log, db, config{})
	if err := r.WaitFor(ctx, msg); err != nil {
		t.Fatal(err)
	}
	c1, err := GetConversation(db, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if c1.Parked != nil || c1.Status == ConversationParked || c1.Messages != 1 {
		t.Errorf("c1 after the upgrade = %+v; want unparked with its message", c1)
	}
	db.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket([]byte(undecodableBucket)); b != nil && b.Stats().KeyN != 0 {
			t.Errorf("%d events still recorded as undecodable", b.Stats().KeyN)
		}
		return nil
	})
}
