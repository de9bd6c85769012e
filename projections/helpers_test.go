package projections

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// testCtx bounds a test's waits.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second) // a bound for a loaded CI machine under -race, not a speed test
	t.Cleanup(cancel)
	return ctx
}

func openDB(t *testing.T, path string) *bbolt.DB {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "projections.db")
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// startRunner opens a Runner on every projection and closes it at cleanup
// (closing twice is fine).
func startRunner(t *testing.T, log *events.Log, db *bbolt.DB, cfg config) *Runner {
	t.Helper()
	r, err := open(testCtx(t), log, db, nil, cfg, All()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

// seeder appends events as a single writer per scope would, with times one
// second apart so that runs are reproducible.
type seeder struct {
	t    *testing.T
	log  *events.Log
	last map[events.Scope]uint64
	now  time.Time
}

func newSeeder(t *testing.T, log *events.Log) *seeder {
	return &seeder{t: t, log: log, last: map[events.Scope]uint64{}, now: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)}
}

func (s *seeder) add(scope events.Scope, e events.Event) events.Envelope {
	s.t.Helper()
	env := events.MustNew(e)
	s.now = s.now.Add(time.Second)
	env.Time = s.now
	stored, err := s.log.Append(s.t.Context(), scope, s.last[scope], env)
	if err != nil {
		s.t.Fatalf("append %s: %v", e.EventType(), err)
	}
	s.last[scope] = stored[0].Seq
	return stored[0]
}

// conv appends to conversation id.
func (s *seeder) conv(id string, e events.Event) uint64 {
	s.t.Helper()
	return s.add(events.Conv(id), e).Seq
}

func dumpAll(t *testing.T, db *bbolt.DB) string {
	t.Helper()
	var out []byte
	for _, p := range All() {
		b, err := Dump(db, p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return string(out)
}

func cost(v float64) *float64 { return &v }
