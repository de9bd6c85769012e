package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/scheduler"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/tools/schedule"
	"github.com/my-agent-crew/crew/ui"
	"go.etcd.io/bbolt"
)

// SchedulerJobs is the Jobs of a running crew: the jobs projection, with
// profile jobs that have not fired yet filled in from config, and the
// scheduler to run and cancel them (its errors are mapped by statusOf).
type SchedulerJobs struct {
	DB        *bbolt.DB
	Location  *time.Location
	Scheduler JobControl
	Profile   func() []scheduler.Job // the enabled schedules of the loaded agents
	// Disabled are the schedules written down with enabled: false (nil:
	// none); Toggle writes enabled: back into agent.yaml (nil: the
	// toggle is refused).
	Disabled func() []scheduler.Job
	Toggle   func(ctx context.Context, id string, on bool) error
	// Log and Fresh make a listing read its writes: it waits (briefly)
	// for the jobs projection to apply what the log held when it was asked
	// (nil: it lists what the projection has).
	Log   *events.Log
	Fresh projections.Freshness
}

var _ Jobs = (*SchedulerJobs)(nil)

// JobControl runs and cancels jobs: the scheduler, or on a crew process
// that does not lead its cluster, a door to the leader's.
type JobControl interface {
	Cancel(ctx context.Context, id, reason string) error
	RunNow(ctx context.Context, id string) error
}

// List is every job: each schedule of every agent, enabled or not, and
// the chat jobs, with enabled, the next run (computed from the cron for a
// schedule that has not fired yet) and the last run's outcome.
func (j *SchedulerJobs) List(ctx context.Context) (any, error) {
	if j.Log != nil && j.Fresh != nil {
		// A job schedule_create stored a moment ago (list_crons in the
		// same run) is in the list.
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := projections.ReadYourWrites(wctx, j.Log, j.Fresh)
		cancel()
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
	}
	list, err := projections.ListJobs(j.DB)
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []projections.Job{}
	}
	byID := map[string]int{}
	for i := range list {
		byID[list[i].ID] = i
		list[i].Enabled = list[i].Cancelled == nil && list[i].Origin != events.OriginProfile
	}
	var disabled []scheduler.Job
	if j.Disabled != nil {
		disabled = j.Disabled()
	}
	now := time.Now()
	for n, p := range append(j.Profile(), disabled...) {
		on := n < len(j.Profile())
		i, ok := byID[p.ID]
		if !ok {
			list = append(list, projections.Job{ID: p.ID, Status: "idle"})
			i = len(list) - 1
			byID[p.ID] = i
		}
		v := &list[i]
		v.Agent, v.Name, v.Origin, v.Cron = p.Agent, p.Name, events.OriginProfile, p.Cron
		v.Prompt, v.Command, v.Script, v.ThenPrompt, v.ApprovalTTLSeconds = p.Prompt, p.Command, p.Script, p.ThenPrompt, p.ApprovalTTLSeconds
		v.Enabled = on
		switch {
		case !on:
			v.Status, v.NextRun = "disabled", nil
		case v.NextRun == nil:
			if c := gocron.NewDefaultCron(false); c.IsValid(p.Cron, j.Location, now) == nil {
				if next := c.Next(now); !next.IsZero() {
					v.NextRun = &next
				}
			}
		}
	}
	sort.Slice(list, func(a, b int) bool { return list[a].ID < list[b].ID })
	return list, nil
}

// SetEnabled turns a schedule of agent.yaml on or off.
func (j *SchedulerJobs) SetEnabled(ctx context.Context, id string, on bool) error {
	if j.Toggle == nil {
		return fmt.Errorf("%w: schedules are not editable here", ErrRefused)
	}
	return j.Toggle(ctx, id, on)
}

func (j *SchedulerJobs) Rows(ctx context.Context) ([]ui.JobRow, error) {
	v, err := j.List(ctx)
	if err != nil {
		return nil, err
	}
	return j.rows(v.([]projections.Job)), nil
}

// rows are the page's rows of list, times in the owner's zone.
func (j *SchedulerJobs) rows(list []projections.Job) []ui.JobRow {
	var rows []ui.JobRow
	for _, job := range list {
		row := ui.JobRow{ID: job.ID, Agent: job.Agent, Name: cmp.Or(job.Name, job.ID), Origin: job.Origin, When: job.Cron,
			Status: job.Status, LastStatus: job.LastStatus, LastError: job.LastError, LastConversation: job.LastConversation,
			Runs: job.Runs, Failures: job.Failures, Cancelled: job.Cancelled != nil, Enabled: job.Enabled,
			LastAttempt: job.LastAttempt, RetryAttempt: job.RetryAttempt}
		if row.When == "" {
			row.When = "once at " + job.At
		}
		switch {
		case job.Prompt != "":
			row.What = job.Prompt
		case job.Command != "":
			row.What = "/" + job.Command
		case job.Script == "":
			row.What = "memory consolidate"
		default:
			row.What = "$ " + job.Script
			if job.ThenPrompt != "" {
				row.What += "\nthen: " + job.ThenPrompt
			}
		}
		if job.LastFired != nil {
			row.LastFired = job.LastFired.In(j.Location).Format("Jan 2 15:04")
		}
		if job.RetryAt != nil {
			row.RetryAt = job.RetryAt.In(j.Location).Format("Jan 2 15:04:05")
		}
		if job.NextRun != nil {
			row.NextRun = job.NextRun.In(j.Location).Format("Jan 2 15:04")
		}
		rows = append(rows, row)
	}
	return rows
}

func (j *SchedulerJobs) Cancel(ctx context.Context, id string) error {
	return j.Scheduler.Cancel(ctx, id, "owner")
}

func (j *SchedulerJobs) RunNow(ctx context.Context, id string) error {
	return j.Scheduler.RunNow(ctx, id)
}

// Crons are the jobs as list_crons and cancel_cron see them: the list
// /api/jobs shows (the jobs projection merged with every agent.yaml
// schedule), chat jobs cancelled through the scheduler, schedules turned
// off in agent.yaml.
func (j *SchedulerJobs) Crons() schedule.Crons { return crons{j} }

type crons struct{ j *SchedulerJobs }

func (c crons) List(ctx context.Context) ([]schedule.Cron, error) {
	v, err := c.j.List(ctx)
	if err != nil {
		return nil, err
	}
	list := v.([]projections.Job)
	rows := c.j.rows(list)
	var out []schedule.Cron
	for i, j := range list {
		r := rows[i]
		out = append(out, schedule.Cron{ID: j.ID, Agent: j.Agent, Name: r.Name, Origin: j.Origin, When: r.When, What: r.What,
			Enabled: j.Enabled, Status: j.Status, NextRun: r.NextRun, LastRun: r.LastFired, LastStatus: j.LastStatus, RetryAt: r.RetryAt})
	}
	return out, nil
}

func (c crons) Cancel(ctx context.Context, id, reason string) error {
	return c.j.Scheduler.Cancel(ctx, id, reason)
}

func (c crons) Disable(ctx context.Context, id string) error {
	return c.j.SetEnabled(ctx, id, false)
}
