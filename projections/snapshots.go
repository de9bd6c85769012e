package projections

import (
	"fmt"

	"go.etcd.io/bbolt"
)

// snapshotsBucket holds encoded turn states by conversation id. It is a
// cache written by loop.LoadState, not a projection: it is never rebuilt,
// and a missing or unreadable snapshot only means a longer replay.
var snapshotsBucket = []byte("snapshots")

// Snapshots stores turn-state snapshots in the projections database. It
// implements loop.Snapshots.
type Snapshots struct{ DB *bbolt.DB }

// LoadSnapshot returns a copy of the conversation's snapshot, or nil.
func (s Snapshots) LoadSnapshot(conversation string) ([]byte, error) {
	var out []byte
	err := s.DB.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(snapshotsBucket)
		if b == nil {
			return nil
		}
		if v := b.Get([]byte(conversation)); v != nil {
			out = append([]byte(nil), v...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load snapshot of %s: %w", conversation, err)
	}
	return out, nil
}

// SaveSnapshot replaces the conversation's snapshot.
func (s Snapshots) SaveSnapshot(conversation string, data []byte) error {
	err := s.DB.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(snapshotsBucket)
		if err != nil {
			return err
		}
		return b.Put([]byte(conversation), data)
	})
	if err != nil {
		return fmt.Errorf("save snapshot of %s: %w", conversation, err)
	}
	return nil
}
