package projections

import (
	"context"
	"errors"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/nats-io/nats.go/jetstream"
	"go.etcd.io/bbolt"
)

// rebuildBatch is how many events one bbolt transaction of Rebuild applies.
const rebuildBatch = 1000

// Rebuild deletes p's buckets and checkpoint and replays the whole stream
// into them, in transactions of 1000 events that each write the checkpoint.
// It also deletes p's durable consumer, so the next Open recreates it from
// the new checkpoint. Run it with no Runner feeding p (a stopped home: the
// caller opened the store itself). If it fails part-way, the checkpoint
// still matches what was applied and the next Open or Rebuild goes on from
// there correctly.
func Rebuild(ctx context.Context, log *events.Log, db *bbolt.DB, p Projection) error {
	return rebuild(ctx, log, db, p, rebuildBatch)
}

func rebuild(ctx context.Context, log *events.Log, db *bbolt.DB, p Projection, batch int) error {
	if err := validate([]Projection{p}); err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	name := p.Name()
	err := log.Stream().DeleteConsumer(ctx, consumerName(log, name))
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("rebuild %s: delete consumer: %w", name, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		if err := deleteProjection(tx, p); err != nil {
			return err
		}
		return writeVersion(tx, p)
	})
	if err != nil {
		return fmt.Errorf("rebuild %s: %w", name, err)
	}
	tx, err := db.Begin(true)
	if err != nil {
		return fmt.Errorf("rebuild %s: %w", name, err)
	}
	defer func() {
		if tx != nil {
			tx.Rollback()
		}
	}()
	n := 0
	// A conversation's event this build cannot decode ends a Read: it is
	// passed as the Runner passes it, and reading goes on after it.
	for from, more := uint64(0), true; more; {
		more = false
		for env, err := range log.Read(ctx, allEvents, from) {
			if de := (*events.DecodeError)(nil); errors.As(err, &de) {
				if err := skipUndecodable(&Tx{Tx: tx}, p, de); err != nil {
					return fmt.Errorf("rebuild: %w", err)
				}
				from, more = de.Seq+1, true
				break
			}
			if err != nil {
				return fmt.Errorf("rebuild %s: %w", name, err)
			}
			if err := applyEvent(tx, p, env); err != nil {
				return fmt.Errorf("rebuild: %w", err)
			}
			if n++; n%batch == 0 {
				err := tx.Commit()
				tx = nil
				if err != nil {
					return fmt.Errorf("rebuild %s: commit at seq %d: %w", name, env.Seq, err)
				}
				if tx, err = db.Begin(true); err != nil {
					return fmt.Errorf("rebuild %s: %w", name, err)
				}
			}
		}
	}
	err = tx.Commit()
	tx = nil
	if err != nil {
		return fmt.Errorf("rebuild %s: commit: %w", name, err)
	}
	return nil
}
