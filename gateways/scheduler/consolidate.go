package scheduler

import (
	"context"

	"github.com/my-agent-crew/crew/events"
)

// runConsolidate runs a consolidate job: Config.RunConsolidate files a
// memory proposal for the agent, and its answer is the job's output. No
// conversation is opened.
func (s *Scheduler) runConsolidate(ctx context.Context, e *entry, fired string) error {
	if s.cfg.RunConsolidate == nil {
		return s.complete(ctx, e, fired, events.JobFailed, "", "no memory consolidation configured")
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.ScriptTimeout)
	out, err := s.cfg.RunConsolidate(cctx, e.job.Agent)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err() // shutting down: the firing stays open, completed at the next start
	}
	if err != nil {
		return s.complete(ctx, e, fired, events.JobFailed, out, err.Error())
	}
	return s.complete(ctx, e, fired, events.JobOK, out, "")
}
