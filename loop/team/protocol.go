package team

import (
	"context"

	"github.com/my-agent-crew/crew/events"
)

// request sends a typed control request from the lead to a member: a
// fresh request id, pending until its response (seed 001 §11).
func (r *Runtime) request(ctx context.Context, t *Team, typ, to, content string) (string, error) {
	id := newID("req_")
	_, err := t.Send(ctx, to, func(b *Board, mb *Mailboxes) ([]events.Event, error) {
		if why := recipient(b, Lead, to); why != "" {
			return nil, refuse("%s", why)
		}
		if p := mb.Pending(typ, to); p != nil {
			return nil, refuse("Not sent: %s already has a pending %s (%s).", to, typ, p.ID)
		}
		return []events.Event{&events.MailSent{From: Lead, To: to, Type: typ, Content: content, RequestID: id}}, nil
	})
	return id, err
}
