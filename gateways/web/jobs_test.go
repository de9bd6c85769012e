package web_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/scheduler"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/projections/projectionstest"
	"github.com/my-agent-crew/crew/tools/schedule"
)

// list_crons after schedule_create in the same run, or GET /api/jobs after
// a job was stored: the listing waits for the jobs projection to apply what
// the log held when it was asked (cmd/crew
// TestListAndCancelCronsOwnershipThroughServe missed the job just created,
// under load, in a mid-session CI).
func TestJobListingReadsItsWrites(t *testing.T) {
	ctx := t.Context()
	log, db, runner := projectionstest.Start(t)
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

// list_crons sees what /api/jobs shows: a chat job from the projection
// and a profile schedule from agent.yaml, with the page's texts;
// cancel_cron cancels through the scheduler and turns a schedule off
// through agent.yaml.
func TestCronsAreTheJobsList(t *testing.T) {
	ctx := t.Context()
	log, db, runner := projectionstest.Start(t)
	env, err := events.New(&events.JobScheduled{Agent: "master", Name: "standup", Cron: "0 9 * * 1-5", Prompt: "plan", Origin: events.OriginChat})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := log.Append(ctx, events.Job("master-standup"), events.Any, env); err != nil {
		t.Fatal(err)
	}
	ctl := &recordedControl{}
	var toggled []string
	jobs := &web.SchedulerJobs{DB: db, Location: time.UTC, Log: log, Fresh: runner, Scheduler: ctl,
		Profile: func() []scheduler.Job {
			return []scheduler.Job{{ID: "coach-water", Agent: "coach", Name: "water", Cron: "0 * * * *", Command: "hydrate"}}
		},
		Toggle: func(_ context.Context, id string, on bool) error {
			toggled = append(toggled, fmt.Sprintf("%s %v", id, on))
			return nil
		}}
	crons := jobs.Crons()
	got, err := crons.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []schedule.Cron{
		{ID: "coach-water", Agent: "coach", Name: "water", Origin: events.OriginProfile, When: "0 * * * *", What: "/hydrate", Enabled: true, Status: "idle"},
		{ID: "master-standup", Agent: "master", Name: "standup", Origin: events.OriginChat, When: "0 9 * * 1-5", What: "plan", Enabled: true, Status: "idle"},
	}
	if len(got) != len(want) {
		t.Fatalf("crons = %+v, want %+v", got, want)
	}
	for i := range want {
		g := got[i]
		if g.NextRun == "" && g.Origin == events.OriginProfile {
			t.Errorf("%s: no next run, want the cron's next", g.ID)
		}
		g.NextRun = ""
		if g != want[i] {
			t.Errorf("crons[%d] = %+v, want %+v", i, g, want[i])
		}
	}
	if err := crons.Cancel(ctx, "master-standup", "asked"); err != nil {
		t.Fatal(err)
	}
	if err := crons.Disable(ctx, "coach-water"); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ctl.cancelled) != "[master-standup asked]" || fmt.Sprint(toggled) != "[coach-water false]" {
		t.Errorf("cancelled %q, toggled %q; want the chat job cancelled and the schedule off", ctl.cancelled, toggled)
	}
}

// recordedControl is a scheduler that records what it was asked.
type recordedControl struct{ cancelled []string }

func (c *recordedControl) Cancel(_ context.Context, id, reason string) error {
	c.cancelled = append(c.cancelled, id+" "+reason)
	return nil
}
func (c *recordedControl) RunNow(context.Context, string) error { return nil }
