package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/projections"
	"go.etcd.io/bbolt"
)

// ProjectionViews is the Views of a running crew: the read models from
// the projections.
type ProjectionViews struct {
	DB    *bbolt.DB
	Convs Histories // the conversations' model-visible history
	// Log and Fresh, when set, make a view wait (at most two seconds, as
	// a page does) for the projections to apply what the log held of it
	// when it was asked for: a client reads what was stored before its
	// request, and a conversation's status is as new as its history.
	Log   *events.Log
	Fresh projections.Freshness
}

// caughtUp waits, at most two seconds, for the projections to apply the
// log's last event on filter; on a timeout or a stopped projection the
// view answers with what there is.
func (v ProjectionViews) caughtUp(ctx context.Context, filter string) {
	caughtUpOn(ctx, v.Log, v.Fresh, filter)
}

// Histories is the conversations' history as the model sees it, as JSON
// (loop.Convs): an *events.DecodeError when an event of a conversation's
// log cannot be decoded.
type Histories interface {
	History(ctx context.Context, id string) (json.RawMessage, error)
}

// conversationView is GET /api/conversations/{id}: the projection's view
// plus the history as the model sees it. A parked conversation (an event
// of its log cannot be decoded) has status "parked", names the event
// (projections.Conversation.Parked) and no history.
type conversationView struct {
	projections.Conversation
	History json.RawMessage `json:"history"`
}

var _ Views = ProjectionViews{}

func (v ProjectionViews) Conversations(ctx context.Context, limit int) (any, error) {
	v.caughtUp(ctx, events.Root+".>")
	return projections.ListConversations(v.DB, limit)
}

func (v ProjectionViews) Conversation(ctx context.Context, id string) (any, error) {
	v.caughtUp(ctx, events.Conv(id).Filter())
	c, err := projections.GetConversation(v.DB, id)
	if errors.Is(err, projections.ErrNotFound) {
		return nil, fmt.Errorf("conversation %q: %w", id, ErrNotFound)
	}
	if err != nil || v.Convs == nil {
		return c, err
	}
	history, err := v.Convs.History(ctx, id)
	if de := (*events.DecodeError)(nil); errors.As(err, &de) {
		// The projection may not have reached the event yet.
		if c.Parked == nil {
			c.Parked = &projections.ParkedEvent{Subject: de.Subject, Seq: de.Seq, Error: de.Error()}
		}
		c.Status = projections.ConversationParked
		return conversationView{Conversation: c, History: json.RawMessage("[]")}, nil
	}
	if err != nil {
		return nil, err
	}
	return conversationView{Conversation: c, History: history}, nil
}

func (v ProjectionViews) Runs(ctx context.Context, conversation string) (any, error) {
	v.caughtUp(ctx, events.Conv(conversation).Filter())
	return projections.ListRuns(v.DB, conversation)
}

func (v ProjectionViews) Run(ctx context.Context, id string) (projections.Run, error) {
	v.caughtUp(ctx, events.Root+".>") // a run's conversation is not known before
	r, err := projections.GetRun(v.DB, id)
	if errors.Is(err, projections.ErrNotFound) {
		return projections.Run{}, fmt.Errorf("run %q: %w", id, ErrNotFound)
	}
	return r, err
}
