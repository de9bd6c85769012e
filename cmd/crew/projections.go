package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
	"go.etcd.io/bbolt"
)

func runProjections(ctx context.Context, env *cliEnv, args []string) error {
	fs, homeFlag := newFlags(env, "projections")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.Arg(0) != "rebuild" || fs.NArg() > 2 {
		fs.Usage()
		return exitError{2}
	}
	all := projections.All()
	chosen := all
	if fs.NArg() == 2 {
		chosen = nil
		var names []string
		for _, p := range all {
			names = append(names, p.Name())
			if p.Name() == fs.Arg(1) {
				chosen = append(chosen, p)
			}
		}
		if chosen == nil {
			return fmt.Errorf("no projection %q (have: %s)", fs.Arg(1), strings.Join(names, ", "))
		}
	}
	dir, h, err := openHome(env, *homeFlag)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, dir, h.Config, slog.New(slog.DiscardHandler))
	if errors.Is(err, errStoreBusy) {
		return fmt.Errorf("%w: stop the server, then rebuild", err)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	for _, p := range chosen {
		start := time.Now()
		if err := projections.Rebuild(ctx, st.log, st.db, p); err != nil {
			return fmt.Errorf("rebuild %s: %w", p.Name(), err)
		}
		cp, _ := projections.Checkpoint(st.db, p.Name())
		fmt.Fprintf(env.stdout, "rebuilt %s up to sequence %d in %s\n", p.Name(), cp, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// views serves the API's read models from the projections.
type views struct {
	db    *bbolt.DB
	convs *loop.Convs // the conversations' model-visible history
}

// conversationView is GET /api/conversations/{id}: the projection's view
// plus the history as the model sees it. A parked conversation (an event
// of its log cannot be decoded) has status "parked", names the event
// (projections.Conversation.Parked) and no history.
type conversationView struct {
	projections.Conversation
	History []loop.Message `json:"history"`
}

var _ web.Views = views{}

func (v views) Conversations(ctx context.Context, limit int) (any, error) {
	return projections.ListConversations(v.db, limit)
}

func (v views) Conversation(ctx context.Context, id string) (any, error) {
	c, err := projections.GetConversation(v.db, id)
	if errors.Is(err, projections.ErrNotFound) {
		return nil, fmt.Errorf("conversation %q: %w", id, web.ErrNotFound)
	}
	if err != nil || v.convs == nil {
		return c, err
	}
	conv, err := v.convs.Get(ctx, id)
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

func (v views) Runs(ctx context.Context, conversation string) (any, error) {
	return projections.ListRuns(v.db, conversation)
}

func (v views) Run(ctx context.Context, id string) (any, error) {
	r, err := projections.GetRun(v.db, id)
	if errors.Is(err, projections.ErrNotFound) {
		return nil, fmt.Errorf("run %q: %w", id, web.ErrNotFound)
	}
	return r, err
}
