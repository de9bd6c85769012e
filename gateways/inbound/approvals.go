package inbound

import (
	"context"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
)

// Approvals decides approvals by id for the gateways (the approve and deny
// forms, the API, Telegram's buttons) through the one decision path,
// loop.Worker.Decide.
type Approvals struct{ ByID }

// Decide finds the approval's conversation and decides it there.
func (c *Approvals) Decide(ctx context.Context, approvalID string, approve, always bool, channel string) (string, error) {
	if err := events.ValidID(approvalID); err != nil {
		return "", err
	}
	// Read your writes: the approval was requested before this call.
	if err := projections.ReadYourWrites(ctx, c.Log, c.Fresh); err != nil {
		return "", err
	}
	conv, err := projections.FindApproval(c.DB, approvalID)
	if err != nil {
		return "", fmt.Errorf("%w: %s", loop.ErrUnknownApproval, approvalID)
	}
	return c.Worker.Decide(ctx, conv, approvalID, approve, always, channel)
}

// Questions answers questions (ask_user) by id for the gateways (the
// answer box, the API, Telegram's buttons and replies) through the one
// answer path, loop.Worker.Answer.
type Questions struct{ ByID }

// Answer finds the question's conversation and answers it there.
func (c *Questions) Answer(ctx context.Context, questionID, answer, channel string) error {
	if err := events.ValidID(questionID); err != nil {
		return fmt.Errorf("%w: %s", loop.ErrUnknownQuestion, err)
	}
	// Read your writes: the question was asked before this call.
	if err := projections.ReadYourWrites(ctx, c.Log, c.Fresh); err != nil {
		return err
	}
	conv, err := projections.FindQuestion(c.DB, questionID)
	if err != nil {
		return fmt.Errorf("%w: %s", loop.ErrUnknownQuestion, questionID)
	}
	return c.Worker.Answer(ctx, conv, questionID, answer, channel)
}

// Outcome is how an approval or a question was settled ("" while it waits
// or when it is unknown): the Telegram gateway settles, after a restart,
// the cards of those settled while it was down.
func (c *Questions) Outcome(ctx context.Context, kind, id string) (string, error) {
	if events.ValidID(id) != nil {
		return "", nil
	}
	if err := projections.ReadYourWrites(ctx, c.Log, c.Fresh); err != nil {
		return "", err
	}
	find := projections.FindQuestion
	if kind == events.CardApproval {
		find = projections.FindApproval
	}
	conv, err := find(c.DB, id)
	if err != nil {
		return "", nil
	}
	return c.Worker.Outcome(ctx, conv, id)
}
