package team

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed claim_task.md
var claimTaskDoc string

// claimTask is claim_task: a compare-and-set on the board (seed 001 §7).
// Of teammates claiming one task at once exactly one wins; the others
// re-read the board and are told it is no longer available.
type claimTask struct{ r *Runtime }

func (claimTask) Def() tools.Def {
	return tools.Def{Name: "claim_task", Description: claimTaskDoc}
}

type claimArgs struct {
	TaskID string `json:"task_id"`
}

func (c claimTask) Run(ctx context.Context, env tools.Env, a claimArgs) (tools.Result, error) {
	t, seat, err := c.r.member(ctx, env)
	if err != nil {
		return outcome("", err)
	}
	dir, err := c.r.Claim(ctx, t, a.TaskID, seat.Member, "claim")
	if err != nil {
		return outcome("", err)
	}
	c.r.setLease(seat.Conversation, a.TaskID, dir)
	c.r.kickAfter(t)
	return outcome(fmt.Sprintf("Claimed %s. Your workspace and shell tools now work in %s. When it is done, call complete_task.", a.TaskID, dir), nil)
}

// Claim makes task id owner's, atomically: it is refused unless the task
// is pending, unowned and unblocked, its binding is sound and owner has no
// task in progress. dir is the task's folder.
func (r *Runtime) Claim(ctx context.Context, t *Team, id, owner, how string) (dir string, err error) {
	_, err = t.AppendBoard(ctx, func(b *Board, _ *Mailboxes) ([]events.Event, error) {
		if why := b.claimRefusal(id, owner); why != "" {
			return nil, refuse("Not claimed: %s", why)
		}
		d, why := r.taskDir(b, b.Tasks[id])
		if why != "" {
			return nil, refuse("Not claimed: %s", why)
		}
		dir = d
		return []events.Event{&events.TaskClaimed{TaskID: id, Owner: owner, How: how}}, nil
	})
	return dir, err
}
