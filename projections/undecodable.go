package projections

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// undecodableBucket records the conversation events this build could not
// decode (seq → subject), for every projection alike: one conversation's
// unreadable event parks that conversation instead of stopping every read
// model (R-X-4). Once a later build can read them, Open rebuilds.
const undecodableBucket = "_undecodable"

// ParkedEvent names the event a conversation is parked at.
type ParkedEvent struct {
	Subject string `json:"subject"`
	Seq     uint64 `json:"seq"`
	Error   string `json:"error"`
}

// parker is a projection that shows conversations parked
// (TestConversationsParks keeps Conversations one).
type parker interface {
	park(tx *Tx, conversation string, ev ParkedEvent) error
}

// skipUndecodable answers p's decode failure de inside tx: a conversation's
// event is recorded, shown by projections that show conversations, and
// passed (the checkpoint moves on); any other stops the projection.
func skipUndecodable(tx *Tx, p Projection, de *events.DecodeError) error {
	scope := events.ScopeOf(de.Subject)
	if scope.Kind() != "conv" || scope.ID() == "" {
		return de
	}
	b, err := tx.CreateBucketIfNotExists([]byte(undecodableBucket))
	if err == nil {
		err = b.Put(u64(de.Seq), []byte(de.Subject))
	}
	for _, name := range p.Buckets() {
		if err == nil {
			_, err = tx.CreateBucketIfNotExists([]byte(name))
		}
	}
	if pk, ok := p.(parker); ok && err == nil {
		err = pk.park(tx, scope.ID(), ParkedEvent{Subject: de.Subject, Seq: de.Seq, Error: de.Error()})
	}
	if err == nil {
		err = writeCheckpoint(tx.Tx, p.Name(), de.Seq)
	}
	if err != nil {
		return &ApplyError{Projection: p.Name(), Subject: de.Subject, Seq: de.Seq, Err: err}
	}
	return nil
}

// readable reports whether an event once recorded as undecodable decodes
// now (a newer build), so the projections that passed it must be rebuilt.
func readable(ctx context.Context, log *events.Log, db *bbolt.DB) (bool, error) {
	var seqs []uint64
	err := db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(undecodableBucket))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			if len(k) == 8 {
				seqs = append(seqs, binary.BigEndian.Uint64(k))
			}
			return nil
		})
	})
	if err != nil {
		return false, err
	}
	for _, seq := range seqs {
		msg, err := log.Stream().GetMsg(ctx, seq)
		if err != nil {
			continue // gone from the stream: nothing to read again
		}
		if _, err := events.DecodeStored(msg.Subject, seq, msg.Data); err == nil {
			return true, nil
		} else if !errors.As(err, new(*events.DecodeError)) {
			return false, fmt.Errorf("decode seq %d: %w", seq, err)
		}
	}
	return false, nil
}

// forgetUndecodable clears the record before a rebuild writes it again.
func forgetUndecodable(db *bbolt.DB) error {
	return db.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket([]byte(undecodableBucket)); err != nil && !errors.Is(err, bbolt.ErrBucketNotFound) {
			return err
		}
		return nil
	})
}
