package scheduler

import (
	"context"
	"errors"

	"github.com/my-agent-crew/crew/tools/schedule"
)

// Adder is the slot as schedule_create adds chat jobs to it: a job the
// scheduler refuses for what it is (invalid, or its id taken) comes back
// schedule.Refused, which the tool tells the model; any other error is
// the harness's.
func (s *Slot) Adder() schedule.Adder { return adder{s} }

type adder struct{ s *Slot }

func (a adder) Add(ctx context.Context, j schedule.Job) error {
	err := a.s.Add(ctx, Job{ID: j.ID, Agent: j.Agent, Name: j.Name, Cron: j.Cron, Prompt: j.Prompt, At: j.At, SourceConversation: j.SourceConversation})
	if errors.Is(err, ErrInvalidJob) || errors.Is(err, ErrJobExists) {
		return schedule.Refused(err)
	}
	return err
}
