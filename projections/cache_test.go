package projections

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"go.etcd.io/bbolt"
)

// TestRecordCacheTravelsWithItsTransaction: a batch's record cache is
// the Tx's own (no process-wide table): what Apply puts through it is
// seen through that Tx, not by another view of the same bbolt
// transaction, and reaches bbolt at the flush.
func TestRecordCacheTravelsWithItsTransaction(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "p.db"))
	err := db.Update(func(btx *bbolt.Tx) error {
		if _, err := btx.CreateBucketIfNotExists([]byte(bucketConversations)); err != nil {
			return err
		}
		tx, flush := cacheRecords(btx)
		convs := tx.Bucket([]byte(bucketConversations))
		if err := tx.putJSON(convs, []byte("c1"), Conversation{ID: "c1", Messages: 3}); err != nil {
			return err
		}
		var c Conversation
		if found, err := tx.getJSON(convs, []byte("c1"), &c); err != nil || !found || c.Messages != 3 {
			t.Errorf("through its Tx: found %v, %+v, %v", found, c, err)
		}
		other := &Tx{Tx: btx}
		if found, _ := other.getJSON(convs, []byte("c1"), &c); found || convs.Get([]byte("c1")) != nil {
			t.Error("another view of the bbolt transaction sees the batch's cache before the flush")
		}
		if err := flush(); err != nil {
			return err
		}
		c = Conversation{}
		if found, err := getJSON(convs, []byte("c1"), &c); err != nil || !found || c.Messages != 3 {
			t.Errorf("after the flush: found %v, %+v, %v", found, c, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestConversationsParks: Conversations keeps the unexported park of
// parker with the Tx signature (a mismatch would silently drop parking).
func TestConversationsParks(t *testing.T) {
	var p Projection = Conversations{}
	if _, ok := p.(parker); !ok {
		t.Fatal("Conversations is no parker: an undecodable conversation event would not be shown parked")
	}
}

// The record cache's bound is one batch: a Runner forgets it at each
// commit, so the next batch reads the record from bbolt again. Here a
// conversation's record is changed in bbolt between batches (as nothing
// but the Runner does; it stands for "what the cache would hide") before
// each of four batches of the same conversation: a cache kept past its
// commit would put back its stale count and lose the change.
func TestRecordCacheIsForgottenAtEachCommit(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	db := openDB(t, "")
	r := startRunner(t, log, db, config{})
	s := newSeeder(t, log)
	s.conv("c1", &events.ConversationOpened{Agent: "coach", Channel: "web"})
	if err := r.WaitFor(ctx, s.conv("c1", &events.MessageReceived{Channel: "web", Text: "first"})); err != nil {
		t.Fatal(err)
	}
	for batch := range 4 {
		outside := 100 * (batch + 1)
		if err := db.Update(func(btx *bbolt.Tx) error {
			b := btx.Bucket([]byte(bucketConversations))
			var c Conversation
			if _, err := getJSON(b, []byte("c1"), &c); err != nil {
				return err
			}
			c.Messages = outside
			return (&Tx{Tx: btx}).putJSON(b, []byte("c1"), c)
		}); err != nil {
			t.Fatal(err)
		}
		if err := r.WaitFor(ctx, s.conv("c1", &events.MessageReceived{Channel: "web", Text: fmt.Sprint("batch ", batch)})); err != nil {
			t.Fatal(err)
		}
		if got, want := messages(t, r, "c1"), outside+1; got != want {
			t.Fatalf("batch %d: messages %d, want %d (the record read from bbolt, plus this batch's one)", batch, got, want)
		}
	}
	if got := r.Commits(); got < 5 {
		t.Errorf("%d commits for five batches", got)
	}
}
