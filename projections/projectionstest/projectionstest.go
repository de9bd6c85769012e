// Package projectionstest runs every read model on a real embedded log
// for tests: an eventstest server, a projections.db in t.TempDir() and a
// Runner, closed by t.Cleanup.
package projectionstest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/projections"
	"go.etcd.io/bbolt"
)

// Start starts an embedded log (eventstest.Start) with every projection
// running on it.
func Start(t testing.TB) (*events.Log, *bbolt.DB, *projections.Runner) {
	t.Helper()
	_, log := eventstest.Start(t)
	db, runner := Open(t, log)
	return log, db, runner
}

// Open opens a projections.db of the test's own and runs every
// projection on log.
func Open(t testing.TB, log *events.Log) (*bbolt.DB, *projections.Runner) {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "projections.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	runner, err := projections.Open(t.Context(), log, db, nil, projections.All()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Close(context.Background()) })
	return db, runner
}

// Append stores evs in scope after its last event, as the scope's one
// writer does, and waits until every projection has applied them.
func Append(t testing.TB, log *events.Log, runner *projections.Runner, scope events.Scope, evs ...events.Event) []events.Envelope {
	t.Helper()
	last, err := log.Last(t.Context(), scope.Filter())
	if err != nil {
		t.Fatal(err)
	}
	envs := make([]events.Envelope, len(evs))
	for i, e := range evs {
		envs[i] = events.MustNew(e)
	}
	stored, err := log.Append(t.Context(), scope, last, envs...)
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.WaitFor(t.Context(), stored[len(stored)-1].Seq); err != nil {
		t.Fatal(err)
	}
	return stored
}
