package projections

import (
	"path/filepath"
	"testing"

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
