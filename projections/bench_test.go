package projections

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/nats-io/nats.go/jetstream"
	"go.etcd.io/bbolt"
)

// catchUpEvents is the size of the home BenchmarkProjectionCatchUp catches
// up with: 2,000 conversations × 12 turns of message, run_started,
// model_called, run_finished (+ one conversation_opened each) ≈ 100k.
const catchUpConvs, catchUpTurns = 2000, 12

// BenchmarkProjectionCatchUp measures projections at zero (after a rebuild
// or an upgrade) catching up with a 100k-event log, all projections at
// once, beside the two raw parts of the same work: writing the same records
// to bbolt in batches, and reading the stream with an ordered consumer.
func BenchmarkProjectionCatchUp(b *testing.B) {
	// The top level runs once: one store for every sub-benchmark.
	_, log := eventstest.Start(b)
	last, err := eventstest.Populate(context.Background(), log, "coach", catchUpConvs, catchUpTurns)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("projections", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			db := benchDB(b)
			b.StartTimer()
			r, err := Open(context.Background(), log, db, nil, All()...)
			if err != nil {
				b.Fatal(err)
			}
			if err := r.WaitFor(context.Background(), last); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			r.Close(context.Background())
			db.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(last)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("raw_ordered_consumer", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for range rawRead(b, log) {
				n++
			}
			if uint64(n) != last {
				b.Fatalf("read %d, want %d", n, last)
			}
		}
		b.ReportMetric(float64(last)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("raw_bbolt_batch_write", func(b *testing.B) {
		var records []jetstream.Msg
		for msg := range rawRead(b, log) {
			records = append(records, msg)
		}
		for b.Loop() {
			b.StopTimer()
			db := benchDB(b)
			b.StartTimer()
			// What each projection stores at the least: the record under
			// its sequence and the checkpoint, one transaction per batch,
			// once per projection.
			for _, p := range All() {
				for i := 0; i < len(records); i += batchMax {
					err := db.Update(func(tx *bbolt.Tx) error {
						bk, err := tx.CreateBucketIfNotExists([]byte("raw_" + p.Name()))
						if err != nil {
							return err
						}
						var seq uint64
						for _, msg := range records[i:min(i+batchMax, len(records))] {
							meta, _ := msg.Metadata()
							seq = meta.Sequence.Stream
							if err := bk.Put(u64(seq), msg.Data()); err != nil {
								return err
							}
						}
						return writeCheckpoint(tx, p.Name(), seq)
					})
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			db.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(last)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}

// rawRead yields every message of the stream through one ordered consumer,
// undecoded.
func rawRead(b *testing.B, log *events.Log) func(func(jetstream.Msg) bool) {
	return func(yield func(jetstream.Msg) bool) {
		ctx := context.Background()
		cons, err := log.JetStream().OrderedConsumer(ctx, events.StreamName, jetstream.OrderedConsumerConfig{FilterSubjects: []string{allEvents}})
		if err != nil {
			b.Fatal(err)
		}
		msgs, err := cons.Messages(jetstream.PullMaxMessages(batchMax))
		if err != nil {
			b.Fatal(err)
		}
		defer msgs.Stop()
		for {
			msg, err := msgs.Next()
			if err != nil {
				b.Fatal(err)
			}
			meta, _ := msg.Metadata()
			if !yield(msg) || meta.NumPending == 0 {
				return
			}
		}
	}
}

func benchDB(b *testing.B) *bbolt.DB {
	db, err := bbolt.Open(filepath.Join(b.TempDir(), fmt.Sprintf("p%d.db", time.Now().UnixNano())), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	return db
}
