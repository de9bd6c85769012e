package projections

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// A projection's Wants must not turn away an event its Apply acts on: for
// every event type of this build, on every scope kind, an event Wants
// refuses leaves the projection's buckets as they were when applied.
func TestSelectiveProjectionsSkipOnlyWhatApplyIgnores(t *testing.T) {
	db := openDB(t, "")
	kinds := []string{"conv", "job", "agent", "canvas", "tg", "budget", "team", "other"}
	for _, p := range All() {
		s, ok := p.(Selective)
		if !ok {
			continue
		}
		wanted := 0
		for _, e := range events.Registered() {
			data, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			for _, kind := range kinds {
				if s.Wants(kind, e.EventType()) {
					wanted++
					continue
				}
				env := events.Envelope{Type: e.EventType(), V: e.EventVersion(), ID: "e1", Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
					Data: data, Subject: fmt.Sprintf("crew.%s.x1.%s", kind, e.EventType()), Seq: 1}
				tx, err := db.Begin(true)
				if err != nil {
					t.Fatal(err)
				}
				if err := ensureBuckets(tx, p); err != nil {
					t.Fatal(err)
				}
				before := dumpTx(tx, p)
				err = p.Apply(&Tx{Tx: tx}, env)
				after := dumpTx(tx, p)
				tx.Rollback()
				if err != nil || !bytes.Equal(before, after) {
					t.Errorf("%s refuses %s but its Apply acts on it: error %v, buckets now\n%s", p.Name(), env.Subject, err, after)
				}
			}
		}
		if wanted == 0 {
			t.Errorf("%s wants nothing", p.Name())
		}
	}
}

// dumpTx is Dump's listing of p's buckets inside tx.
func dumpTx(tx *bbolt.Tx, p Projection) []byte {
	var buf bytes.Buffer
	for _, name := range p.Buckets() {
		if b := tx.Bucket([]byte(name)); b != nil {
			dumpBucket(&buf, strconv.Quote(name), b)
		}
	}
	return buf.Bytes()
}

// The Runner decodes an event's payload only when one of the group's
// members is given it: the ledger's reservations and settlements, which
// no projection reads, cost their envelope alone; a group of the job
// projection alone decodes no conversation's events.
func TestGroupDecodesOnlyWhatAMemberIsGiven(t *testing.T) {
	group := func(ps ...Projection) *group {
		g := &group{}
		for _, p := range ps {
			g.members = append(g.members, &worker{p: p})
		}
		return g
	}
	all := group(All()...)
	for _, typ := range []string{events.TypeBudgetReserved, events.TypeBudgetSettled} {
		if all.wanted("budget", typ) {
			t.Errorf("the projections decode %s, which none reads", typ)
		}
	}
	for _, typ := range []string{events.TypeModelCalled, events.TypeToolCalled, events.TypeToolCompleted} {
		if !all.wanted("conv", typ) {
			t.Errorf("the projections do not decode a conversation's %s", typ)
		}
	}
	if group(Jobs{}).wanted("conv", events.TypeModelCalled) {
		t.Errorf("the job projection's group decodes a conversation's model_called")
	}
}
