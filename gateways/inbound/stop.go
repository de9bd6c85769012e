package inbound

import (
	"context"
	"errors"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
)

// Stops stops conversations for the gateways (the chat page's Stop button,
// the API, Telegram's /stop, crew stop) through the one stop,
// loop.Worker.Stop (issue 27).
type Stops struct{ ByID }

// StoppedConversation is what a stop did to one conversation.
type StoppedConversation struct {
	Conversation string `json:"conversation_id"`
	loop.Stopped
}

// Stop stops conversation's running turn (scope run), its waiting
// messages (queue) or both (all, the default). An unknown conversation is
// ErrUnknownConversation; one with nothing to stop loop.ErrNothingRunning.
func (s *Stops) Stop(ctx context.Context, conversation, scope, by string) (loop.Stopped, error) {
	if err := s.known(ctx, conversation); err != nil {
		return loop.Stopped{}, err
	}
	return s.Worker.Stop(ctx, conversation, scope, by)
}

// RemoveWaiting drops the n-th waiting message (from 1) of conversation.
func (s *Stops) RemoveWaiting(ctx context.Context, conversation string, n int, by string) error {
	if err := s.known(ctx, conversation); err != nil {
		return err
	}
	return s.Worker.RemoveWaiting(ctx, conversation, n, by)
}

func (s *Stops) known(ctx context.Context, conversation string) error {
	if err := events.ValidID(conversation); err != nil {
		return fmt.Errorf("%w: %v", ErrUnknownConversation, err)
	}
	if err := projections.ReadYourWrites(ctx, s.Log, s.Fresh); err != nil {
		return err
	}
	if _, err := projections.GetConversation(s.DB, conversation); errors.Is(err, projections.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrUnknownConversation, conversation)
	} else if err != nil {
		return err
	}
	return nil
}

// StopAll stops every conversation of the home with a run open or
// messages waiting (scope all), and lists what it stopped; none is
// loop.ErrNothingRunning.
func (s *Stops) StopAll(ctx context.Context, by string) ([]StoppedConversation, error) {
	if err := projections.ReadYourWrites(ctx, s.Log, s.Fresh); err != nil {
		return nil, err
	}
	ids, err := projections.Recoverable(s.DB)
	if err != nil {
		return nil, err
	}
	out := []StoppedConversation{}
	var errs []error
	for _, id := range ids {
		got, err := s.Worker.Stop(ctx, id, events.StopAll, by)
		switch {
		case errors.Is(err, loop.ErrNothingRunning):
		case err != nil:
			errs = append(errs, fmt.Errorf("stop %s: %w", id, err))
		default:
			out = append(out, StoppedConversation{Conversation: id, Stopped: got})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return out, err
	}
	if len(out) == 0 {
		return out, fmt.Errorf("%w: no conversation has a run open or a message waiting", loop.ErrNothingRunning)
	}
	return out, nil
}

// Spend is what run has cost so far, in words ("$0.0123", "cost unknown"),
// as the runs view sums it; "" when the run is not known yet.
func (s *Stops) Spend(runID string) string {
	if runID == "" {
		return ""
	}
	r, err := projections.GetRun(s.DB, runID)
	if err != nil {
		return ""
	}
	return loop.Ending{CostUSD: r.Totals.CostUSD, UnknownCostCalls: r.Totals.UnknownCostCalls}.Spend()
}
