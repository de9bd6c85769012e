package web_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/scheduler"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/projections"
	"go.etcd.io/bbolt"
)

// list_crons after schedule_create in the same run, or GET /api/jobs after
// a job was stored: the listing waits for the jobs projection to apply what
// the log held when it was asked (cmd/crew
// TestListAndCancelCronsOwnershipThroughServe missed the job just created,
// under load, in a mid-session CI).
func TestJobListingReadsItsWrites(t *testing.T) {
	ctx := t.Context()
	log, db, runner := projected(t)
	env, err := events.New(&events.JobScheduled{Agent: "master", Name: "standup", Cron: "0 9 * * 1-5", Prompt: "plan", Origin: events.OriginChat})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := log.Append(ctx, events.Job("master-standup"), events.Any, env)
	if err != nil {
		t.Fatal(err)
	}
	fresh := &seenFresh{Freshness: runner}
	jobs := &web.SchedulerJobs{DB: db, Location: time.UTC, Log: log, Fresh: fresh, Profile: func() []scheduler.Job { return nil }}
	v, err := jobs.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waited := false
	for _, seq := range fresh.waited {
		waited = waited || seq >= stored[0].Seq
	}
	if !waited {
		t.Errorf("listed without waiting for the projections to apply %d (waited for %v)", stored[0].Seq, fresh.waited)
	}
	if list := v.([]projections.Job); len(list) != 1 || list[0].ID != "master-standup" {
		t.Errorf("jobs = %+v, want master-standup", list)
	}
}

// projected is an embedded log with every projection running on a bbolt
// file of the test's own.
func projected(t *testing.T) (*events.Log, *bbolt.DB, *projections.Runner) {
	t.Helper()
	_, log := eventstest.Start(t)
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "p.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	runner, err := projections.Open(t.Context(), log, db, nil, projections.All()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Close(context.Background()) })
	return log, db, runner
}
