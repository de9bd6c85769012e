package scheduler

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-co-op/gocron/v2"
	"github.com/my-agent-crew/crew/events"
)

// SetProfile replaces the profile jobs — the schedules of agent.yaml files
// — with jobs, without a restart (R-HOME-4): a removed schedule leaves the
// timetable, a new one joins it, a changed one is rescheduled. A firing in
// progress runs to its end. Jobs that do not validate are refused, and
// nothing changes.
func (s *Scheduler) SetProfile(ctx context.Context, jobs []Job) error {
	want := map[string]Job{}
	crons := map[string]gocron.Cron{}
	for _, j := range jobs {
		j.Origin = events.OriginProfile
		c, err := s.validate(j)
		if err != nil {
			return fmt.Errorf("set profile jobs: %w", err)
		}
		want[j.ID], crons[j.ID] = j, c
	}
	var stale []gocron.Job
	var added []*entry
	type change struct {
		e *entry
		j Job
	}
	var changed []change
	s.mu.Lock()
	for id, e := range s.jobs {
		if e.job.Origin != events.OriginProfile {
			continue
		}
		j, keep := want[id]
		if keep && j == e.job {
			delete(want, id)
			continue
		}
		if e.gj != nil {
			stale = append(stale, e.gj)
			e.gj = nil
		}
		if !keep {
			delete(s.jobs, id) // an open firing keeps its entry through byConv
			continue
		}
		changed = append(changed, change{e, j})
		delete(want, id)
		added = append(added, e)
	}
	s.mu.Unlock()
	for _, c := range changed {
		s.retune(c.e, c.j, crons[c.j.ID])
	}
	for _, gj := range stale {
		if err := s.cron.RemoveJob(gj.ID()); err != nil && !errors.Is(err, gocron.ErrJobNotFound) {
			return fmt.Errorf("set profile jobs: %w", err)
		}
	}
	for id, j := range want {
		s.mu.Lock()
		if e := s.openFiring(id); e != nil && s.jobs[id] == nil {
			// Removed while a firing of it ran, and back: the same entry
			// goes on, so the firing completes and the sequence stays right.
			s.jobs[id] = e
			s.mu.Unlock()
			s.retune(e, j, crons[id])
			added = append(added, e)
			continue
		}
		s.mu.Unlock()
		// A schedule configured before may have history in the log: go on
		// from its last event.
		seq, err := s.cfg.Log.Last(ctx, events.Job(id).Filter())
		if err != nil {
			return fmt.Errorf("set profile jobs: %w", err)
		}
		e := &entry{job: j, cron: crons[id], seq: seq}
		s.mu.Lock()
		if old, ok := s.jobs[id]; ok { // a chat job of the same id stays
			s.mu.Unlock()
			s.cfg.Logger.Error("profile job not added: a chat job has its id", "job", id, "agent", old.job.Agent)
			continue
		}
		s.jobs[id] = e
		s.mu.Unlock()
		added = append(added, e)
	}
	for _, e := range added {
		if err := s.schedule(e); err != nil {
			return fmt.Errorf("set profile jobs: job %s: %w", e.job.ID, err)
		}
	}
	return nil
}

// retune gives a live entry its new definition. Firings read e.job and
// e.cron holding e.fire (fire, deliver, scripts) or e.appendMu (complete,
// nextRun), so both are taken, in the order firings take them.
func (s *Scheduler) retune(e *entry, j Job, c gocron.Cron) {
	e.fire.Lock()
	defer e.fire.Unlock()
	e.appendMu.Lock()
	defer e.appendMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	e.job, e.cron = j, c
}

// openFiring returns the entry of job id's open firing, if one is waiting
// for its run to finish; s.mu is held.
func (s *Scheduler) openFiring(id string) *entry {
	for _, f := range s.byConv {
		if f.job == id && f.entry != nil {
			return f.entry
		}
	}
	return nil
}
