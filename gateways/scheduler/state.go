package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
)

// firing names one open firing of a job.
type firing struct {
	job   string
	fired string // id of its JobFired event
	// entry is the job's entry, which completes the firing also after
	// SetProfile took the job off the timetable.
	entry *entry
}

// fold reads every job scope and returns what the log says of each job.
// Chat jobs get their definition from JobScheduled.
func (s *Scheduler) fold(ctx context.Context) (map[string]*entry, error) {
	out := map[string]*entry{}
	for env, err := range s.cfg.Log.Read(ctx, events.Root+".job.>", 0) {
		if err != nil {
			return nil, fmt.Errorf("read jobs: %w", err)
		}
		id := events.ScopeOf(env.Subject).ID()
		ev, err := env.Decode()
		if err != nil {
			return nil, fmt.Errorf("read jobs: %w", err)
		}
		e := out[id]
		if e == nil {
			e = &entry{}
			out[id] = e
		}
		e.seq = env.Seq
		switch ev := ev.(type) {
		case *events.JobScheduled:
			j := Job{ID: id, Agent: ev.Agent, Name: ev.Name, Cron: ev.Cron, Prompt: ev.Prompt, Command: ev.Command,
				Script: ev.Script, ThenPrompt: ev.ThenPrompt, ApprovalTTLSeconds: ev.ApprovalTTLSeconds,
				Origin: ev.Origin, SourceConversation: ev.SourceConversation}
			if ev.At != "" {
				if j.At, err = time.Parse(time.RFC3339, ev.At); err != nil {
					return nil, fmt.Errorf("read jobs: %s at %q: %w", id, ev.At, err)
				}
			}
			e.job, e.scheduled = j, env.Time
		case *events.JobFired:
			e.lastDue = ev.Due.In(s.cfg.Location)
			e.open, e.openDue, e.openConv, e.openID = true, e.lastDue, ev.Conversation, env.ID
			e.attempt, e.retryAttempt, e.retryAt = max(ev.Attempt, 1), 0, time.Time{}
		case *events.JobRetryScheduled:
			e.retryAttempt, e.retryAt = ev.Attempt, ev.RetryAt
		case *events.JobCompleted:
			e.open, e.openConv, e.openID = false, "", ""
		case *events.JobCancelled:
			e.cancelled = true
		}
	}
	return out, nil
}

// resume finishes or re-delivers a firing left open by the last run.
func (s *Scheduler) resume(ctx context.Context, e *entry) error {
	fired, conv := e.openID, e.openConv
	if conv == "" { // a script job: its conversation exists only if it printed something
		conv = AttemptConversationID(e.job.ID, e.openDue, s.cfg.Location, e.attempt)
	}
	finished, err := s.cfg.Log.ReadAll(ctx, events.Conv(conv).Subject(events.TypeRunFinished), 0)
	if err != nil {
		return err
	}
	if len(finished) > 0 {
		return s.finished(ctx, e, fired, finished[0])
	}
	c, err := s.cfg.Convs.Get(ctx, conv)
	if err != nil {
		return err
	}
	var stored bool
	c.View(func(st *loop.State) { _, stored = st.External["job:"+fired] })
	switch {
	case stored:
		// The loop's recovery runs the queued message; kicking is harmless.
		s.mu.Lock()
		e.openConv = conv
		s.byConv[conv] = firing{job: e.job.ID, fired: fired, entry: e}
		s.mu.Unlock()
		s.cfg.Kick.Kick(conv)
		return nil
	case e.job.Consolidate: // not retried: it may have done its work
		return s.completeRetrying(ctx, e, fired, events.JobFailed, "", "interrupted by a restart while consolidating memory (a proposal may have been filed)", false)
	case e.job.Script != "": // not retried: scripts may have side effects
		return s.completeRetrying(ctx, e, fired, events.JobFailed, "", "interrupted by a restart before the script's turn was stored", false)
	default:
		s.mu.Lock()
		s.byConv[conv] = firing{job: e.job.ID, fired: fired, entry: e}
		s.mu.Unlock()
		text := e.job.Prompt
		if e.job.Command != "" {
			text = "/" + e.job.Command
		}
		return s.deliver(ctx, e, fired, conv, text)
	}
}

// finished completes a firing from its conversation's run_finished.
func (s *Scheduler) finished(ctx context.Context, e *entry, fired string, env events.Envelope) error {
	ev, err := env.Decode()
	if err != nil {
		return err
	}
	rf, ok := ev.(*events.RunFinished)
	if !ok {
		return nil
	}
	s.mu.Lock()
	out := e.scriptOut
	s.mu.Unlock()
	if rf.Status == events.RunDone {
		return s.complete(ctx, e, fired, events.JobOK, out, "")
	}
	msg := rf.Status
	if rf.Reason != "" {
		msg += ": " + rf.Reason
	}
	if rf.Error != "" {
		msg += ": " + rf.Error
	}
	// Retried: a run that failed (the model call carrying the prompt did
	// not succeed) or was cut by crashes; not one the owner stopped, nor
	// one the harness halted on a rule (budget, steps, loop, a denial),
	// which the same prompt would meet again.
	retry := rf.Status == events.RunFailed || rf.Status == events.RunHalted && rf.Reason == "interrupted"
	return s.completeRetrying(ctx, e, fired, events.JobFailed, out, msg, retry)
}

// watch completes prompt firings as their conversations' runs finish.
func (s *Scheduler) watch(from uint64) {
	filter := events.Root + ".conv.*." + events.TypeRunFinished
	for s.ctx.Err() == nil {
		for env, err := range s.cfg.Log.Follow(s.ctx, filter, from) {
			if err != nil {
				if s.ctx.Err() == nil {
					s.cfg.Logger.Error("scheduler: following run_finished", "err", err)
				}
				break
			}
			from = env.Seq + 1
			conv := events.ScopeOf(env.Subject).ID()
			s.mu.Lock()
			f, ok := s.byConv[conv]
			e := f.entry
			s.mu.Unlock()
			if !ok || e == nil {
				continue
			}
			if err := s.finished(s.ctx, e, f.fired, env); err != nil && s.ctx.Err() == nil {
				s.cfg.Logger.Error("scheduler: completing job", "job", f.job, "err", err)
			}
		}
		select {
		case <-s.ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
