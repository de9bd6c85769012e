package events_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// What the embedded server (nats-server 2.12+ atomic batches) allows, pinned
// for docs/adr/0005-appends-stay-one-message-each.md: a conversation's
// expected last sequence on the first message of a batch is checked once,
// a batch is stored whole or not at all, a Nats-Msg-Id seen before refuses
// the whole batch (a retried batch is an error naming the first stored
// sequence, not an ack as a single publish gets), and one repeated inside
// a batch refuses it too.
func TestAtomicBatchWhatTheServerAllows(t *testing.T) {
	srv, _ := eventstest.Start(t)
	nc := srv.Conn()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "PIN", Subjects: []string{"pin.>"},
		Storage: jetstream.FileStorage, Duplicates: time.Minute, AllowAtomicPublish: true})
	if err != nil {
		t.Fatal(err)
	}
	type ack struct {
		Seq   uint64 `json:"seq"`
		Batch string `json:"batch"`
		Count int    `json:"count"`
		Error *struct {
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	// batch publishes msg ids as one batch on pin.c1.<n>, expecting the
	// conversation's last sequence to be expect on the first message.
	n := 0
	batch := func(id string, expect uint64, msgIDs ...string) ack {
		t.Helper()
		var a ack
		for i, mid := range msgIDs {
			n++
			m := nats.NewMsg(fmt.Sprintf("pin.c1.%d", n))
			m.Header.Set("Nats-Batch-Id", id)
			m.Header.Set("Nats-Batch-Sequence", fmt.Sprint(i+1))
			m.Header.Set("Nats-Msg-Id", mid)
			if i == 0 {
				m.Header.Set("Nats-Expected-Last-Subject-Sequence", fmt.Sprint(expect))
				m.Header.Set("Nats-Expected-Last-Subject-Sequence-Subject", "pin.c1.>")
			}
			if i < len(msgIDs)-1 {
				if err := nc.PublishMsg(m); err != nil {
					t.Fatal(err)
				}
				continue
			}
			m.Header.Set("Nats-Batch-Commit", "1")
			reply, err := nc.RequestMsg(m, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(reply.Data, &a); err != nil {
				t.Fatalf("ack %s: %v", reply.Data, err)
			}
		}
		return a
	}
	stored := func() uint64 {
		t.Helper()
		info, err := stream.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}

	if a := batch("b1", 0, "e1", "e2", "e3"); a.Error != nil || a.Seq != 3 || a.Count != 3 {
		t.Fatalf("first batch: %+v; want 3 stored, seq 3", a)
	}
	// The same batch again (its ack was lost): refused, naming the stored
	// sequence of its first message, nothing stored twice.
	a := batch("b2", 0, "e1", "e2", "e3")
	if a.Error == nil || a.Error.ErrCode != 10201 || stored() != 3 {
		t.Fatalf("retried batch: %+v, %d stored; want error 10201 and 3 stored", a, stored())
	}
	// A stale expectation (another writer went first): nothing stored.
	if a := batch("b3", 1, "e4", "e5"); a.Error == nil || a.Error.ErrCode != 10071 || stored() != 3 {
		t.Fatalf("stale expectation: %+v, %d stored; want wrong last sequence and 3 stored", a, stored())
	}
	// An id repeated inside a batch: refused whole.
	if a := batch("b4", 3, "e6", "e6"); a.Error == nil || a.Error.ErrCode != 10201 || stored() != 3 {
		t.Fatalf("repeated id: %+v, %d stored; want error 10201 and 3 stored", a, stored())
	}
	// And the right expectation after all that: stored whole.
	if a := batch("b5", 3, "e7", "e8"); a.Error != nil || a.Seq != 5 {
		t.Fatalf("batch after the refusals: %+v; want seq 5", a)
	}
}
