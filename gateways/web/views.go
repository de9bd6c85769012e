package web

import (
	"context"
	"errors"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
	"go.etcd.io/bbolt"
)

// ProjectionViews is the Views of a running crew: the read models from
// the projections.
type ProjectionViews struct {
	DB    *bbolt.DB
	Convs *loop.Convs // the conversations' model-visible history
}

// conversationView is GET /api/conversations/{id}: the projection's view
// plus the history as the model sees it. A parked conversation (an event
// of its log cannot be decoded) has status "parked", names the event
// (projections.Conversation.Parked) and no history.
type conversationView struct {
	projections.Conversation
	History []loop.Message `json:"history"`
}

var _ Views = ProjectionViews{}

func (v ProjectionViews) Conversations(ctx context.Context, limit int) (any, error) {
	return projections.ListConversations(v.DB, limit)
}

func (v ProjectionViews) Conversation(ctx context.Context, id string) (any, error) {
	c, err := projections.GetConversation(v.DB, id)
	if errors.Is(err, projections.ErrNotFound) {
		return nil, fmt.Errorf("conversation %q: %w", id, ErrNotFound)
	}
	if err != nil || v.Convs == nil {
		return c, err
	}
	conv, err := v.Convs.Get(ctx, id)
	if de := (*events.DecodeError)(nil); errors.As(err, &de) {
		// The projection may not have reached the event yet.
		if c.Parked == nil {
			c.Parked = &projections.ParkedEvent{Subject: de.Subject, Seq: de.Seq, Error: de.Error()}
		}
		c.Status = projections.ConversationParked
		return conversationView{Conversation: c, History: []loop.Message{}}, nil
	}
	if err != nil {
		return nil, err
	}
	out := conversationView{Conversation: c}
	conv.View(func(st *loop.State) { out.History = append([]loop.Message{}, st.Messages...) })
	return out, nil
}

func (v ProjectionViews) Runs(ctx context.Context, conversation string) (any, error) {
	return projections.ListRuns(v.DB, conversation)
}

func (v ProjectionViews) Run(ctx context.Context, id string) (any, error) {
	r, err := projections.GetRun(v.DB, id)
	if errors.Is(err, projections.ErrNotFound) {
		return nil, fmt.Errorf("run %q: %w", id, ErrNotFound)
	}
	return r, err
}
