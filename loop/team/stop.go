package team

import (
	"context"
	"errors"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/loop"
)

// StoppedTurn is one conversation of a team that the owner's stop of the
// team stopped (view.StoppedTurn).
type StoppedTurn = view.StoppedTurn

// StopTeam is the owner's stop of a whole team (issue 27): every member's
// current turn and the lead's are stopped (scope all: the run, and what
// waits behind it), and the team is held — no mail delivered, no task
// given or claimed, no steer — until the lead runs again, on the owner's
// next message (team_stop_requested, stored first). A team with nothing
// running or waiting is loop.ErrNothingRunning, and nothing is stored.
func (r *Runtime) StopTeam(ctx context.Context, id, by string) ([]StoppedTurn, error) {
	if r.turns == nil {
		return nil, errors.New("team: no worker to stop the turns")
	}
	if !loop.ValidStopBy(by) {
		return nil, fmt.Errorf("%w: stopped by %q", loop.ErrBadScope, by)
	}
	t, err := r.Team(ctx, id)
	if err != nil {
		return nil, err
	}
	seats := []StoppedTurn{}
	t.View(ctx, func(b *Board, _ *Mailboxes) {
		for _, name := range b.Roster {
			if m := b.Members[name]; !m.Stopped && m.Conversation != "" {
				seats = append(seats, StoppedTurn{Conversation: m.Conversation, Member: name})
			}
		}
	})
	seats = append(seats, StoppedTurn{Conversation: id, Member: Lead})
	var leadMessages int
	busy := false
	for _, s := range seats {
		conv, err := r.cfg.Convs.Get(ctx, s.Conversation)
		if err != nil {
			return nil, err
		}
		conv.View(func(st *loop.State) {
			busy = busy || st.OpenRun != "" || len(st.Queued) > 0
			if s.Member == Lead {
				leadMessages = len(st.Messages)
			}
		})
	}
	if !busy {
		return nil, fmt.Errorf("%w: no teammate of team %s and not its lead has a turn running or a message waiting", loop.ErrNothingRunning, id)
	}
	if _, err := t.AppendBoard(ctx, func(*Board, *Mailboxes) ([]events.Event, error) {
		return []events.Event{&events.TeamStopRequested{By: by, LeadMessages: leadMessages}}, nil
	}); err != nil {
		return nil, err
	}
	out := []StoppedTurn{}
	var errs []error
	for _, s := range seats {
		got, err := r.turns.Stop(ctx, s.Conversation, events.StopAll, by)
		switch {
		case errors.Is(err, loop.ErrNothingRunning):
		case err != nil:
			errs = append(errs, fmt.Errorf("stop %s: %w", s.Member, err))
		default:
			s.Stopped = got
			out = append(out, s)
		}
	}
	return out, errors.Join(errs...)
}

// held says whether the owner's stop of the team holds it still: the
// owner has not written to the lead since (no message of theirs after the
// history the stop saw).
func (r *Runtime) held(ctx context.Context, t *Team) (bool, error) {
	var h *events.TeamStopRequested
	t.View(ctx, func(b *Board, _ *Mailboxes) { h = b.Halt })
	if h == nil {
		return false, nil
	}
	lead, err := r.cfg.Convs.Get(ctx, t.id)
	if err != nil {
		return false, err
	}
	held := true
	lead.View(func(st *loop.State) {
		for _, m := range st.Messages[min(h.LeadMessages, len(st.Messages)):] {
			if m.Role == loop.RoleUser && !m.Team && !m.Task {
				held = false
			}
		}
	})
	return held, nil
}
