package team

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
)

// maxAttempts bounds the re-reads after conflicts of one decision: each
// conflict means another writer's decision was stored, so a few suffice
// even for eight claimants of one task.
const maxAttempts = 16

// Team is one team's board and mailboxes as this process knows them:
// caught up from the log before every decision, and written with the
// expectation of the scope's last sequence. Two Teams over one log (two
// processes, or a test's eight claimants) therefore never both win a
// claim: the later append is a conflict, re-decided on the caught-up board.
type Team struct {
	id  string
	log loop.Appender

	mu    sync.Mutex
	board *Board
	mail  *Mailboxes
}

// Open returns team id's fold over log, caught up.
func Open(ctx context.Context, log loop.Appender, id string) (*Team, error) {
	if err := events.ValidID(id); err != nil {
		return nil, err
	}
	t := &Team{id: id, log: log, board: newBoard(id), mail: newMailboxes()}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.catchUp(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// ID is the team's id: its lead's conversation.
func (t *Team) ID() string { return t.id }

// catchUp applies what was stored after the folds; t.mu is held.
func (t *Team) catchUp(ctx context.Context) error {
	if err := read(ctx, t.log, events.Team(t.id).Filter(), t.board.Seq, t.board.Apply); err != nil {
		return err
	}
	return read(ctx, t.log, events.MailOf(t.id), t.mail.Seq, t.mail.Apply)
}

func read(ctx context.Context, log loop.Reader, filter string, after uint64, apply func(events.Envelope) error) error {
	last, err := log.Last(ctx, filter)
	if err != nil {
		return fmt.Errorf("team: %w", err)
	}
	if last <= after {
		return nil
	}
	for env, err := range log.Read(ctx, filter, after+1) {
		if err != nil {
			return fmt.Errorf("team: %w", err)
		}
		if err := apply(env); err != nil {
			return fmt.Errorf("team: %w", err)
		}
	}
	return nil
}

// View calls f with the caught-up folds under the team's lock; f must not
// keep them.
func (t *Team) View(ctx context.Context, f func(b *Board, m *Mailboxes)) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.catchUp(ctx); err != nil {
		return err
	}
	f(t.board, t.mail)
	return nil
}

// Decide returns what to append to the board (none: nothing to do), or a
// refusal the model reads (a *Refusal), or an error.
type Decide func(b *Board, m *Mailboxes) ([]events.Event, error)

// Refusal is a decision's no: data for the model, nothing was stored.
type Refusal struct{ Text string }

func (r *Refusal) Error() string { return r.Text }

func refuse(format string, args ...any) error { return &Refusal{Text: fmt.Sprintf(format, args...)} }

// AppendBoard decides on the caught-up board and appends to the team's
// scope expecting its last sequence; on a conflict it catches up and
// decides again.
func (t *Team) AppendBoard(ctx context.Context, decide Decide) ([]events.Envelope, error) {
	return t.append(ctx, events.Team(t.id), func() uint64 { return t.board.Seq }, t.board.Apply, decide)
}

// Send decides on the caught-up folds and appends to member to's mailbox,
// expecting that mailbox's last sequence.
func (t *Team) Send(ctx context.Context, to string, decide Decide) ([]events.Envelope, error) {
	return t.append(ctx, events.Mail(t.id, to), func() uint64 { return t.mail.Last[to] }, t.mail.Apply, decide)
}

func (t *Team) append(ctx context.Context, scope events.Scope, expect func() uint64, apply func(events.Envelope) error, decide Decide) ([]events.Envelope, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if err := t.catchUp(ctx); err != nil {
			return nil, err
		}
		evs, err := decide(t.board, t.mail)
		if err != nil || len(evs) == 0 {
			return nil, err
		}
		envs := make([]events.Envelope, len(evs))
		for i, e := range evs {
			if envs[i], err = events.New(e); err != nil {
				return nil, err
			}
		}
		stored, err := t.log.Append(ctx, scope, expect(), envs...)
		// A mailbox's stored events reach the fold by the next catch-up
		// (its Seq covers every mailbox of the team, in stream order); the
		// board's own are applied now.
		if scope == events.Team(t.id) {
			for _, env := range stored {
				if aerr := apply(env); aerr != nil {
					return stored, aerr
				}
			}
		}
		if errors.Is(err, events.ErrConflict) && len(stored) == 0 && attempt < maxAttempts {
			continue
		}
		if err != nil {
			return stored, fmt.Errorf("team %s: %w", t.id, err)
		}
		return stored, nil
	}
}
