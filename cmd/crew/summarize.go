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
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/loop/notes"
	"github.com/my-agent-crew/crew/projections"
	"github.com/tmc/langchaingo/llms"
	"go.etcd.io/bbolt"
)

// summarizer writes conversation summaries: at day end, when a day's
// conversation closes, and on demand. The next conversation of the agent
// on the same channel is told the latest one as "Previous conversation"
// (R-CTX-2).
type summarizer struct {
	log    *events.Log
	convs  *loop.Convs
	db     *bbolt.DB
	runner *projections.Runner
	crew   *liveCrew
	models func(route string) (llms.Model, error)
	loc    *time.Location
	clock  func() time.Time
	logger *slog.Logger
}

// errNothingToSummarize: the conversation has no message since its last
// summary.
var errNothingToSummarize = errors.New("nothing to summarize: no message since the last summary")

// Summarize makes and stores a summary of the conversation as it is now.
func (s *summarizer) Summarize(ctx context.Context, id string) (string, error) {
	conv, err := s.conv(ctx, id)
	if err != nil {
		return "", err
	}
	var agentID string
	var lines []notes.Line
	var last time.Time
	var through, summarizedThrough uint64
	for env, err := range s.log.Read(ctx, events.Conv(id).Filter(), 1) {
		if err != nil {
			return "", err
		}
		e, err := env.Decode()
		if err != nil {
			return "", err
		}
		switch e := e.(type) {
		case *events.ConversationOpened:
			agentID = e.Agent
		case *events.ConversationSummarized:
			summarizedThrough = e.ThroughSeq
		case *events.MessageReceived:
			lines = append(lines, notes.Line{At: env.Time, Role: "owner", Text: e.Text})
			last, through = env.Time, env.Seq
		case *events.SteerReceived:
			lines = append(lines, notes.Line{At: env.Time, Role: "owner", Text: e.Text})
			last, through = env.Time, env.Seq
		case *events.ModelCalled:
			if e.Error == "" && strings.TrimSpace(e.Text) != "" {
				lines = append(lines, notes.Line{At: env.Time, Role: agentID, Text: e.Text})
				last, through = env.Time, env.Seq
			}
		}
	}
	if agentID == "" {
		return "", fmt.Errorf("conversation %q: %w", id, web.ErrNotFound)
	}
	if len(lines) == 0 || through <= summarizedThrough {
		return "", fmt.Errorf("%w: %w", web.ErrRefused, errNothingToSummarize)
	}
	agent, ok := s.crew.agent(agentID)
	if !ok {
		return "", fmt.Errorf("summarize %s: agent %q is not loaded", id, agentID)
	}
	prompt := notes.SummaryPrompt(notes.Transcript(lines, s.loc), s.clock(), s.loc)
	text, route, cost, err := llm.Ask(ctx, s.models, agent.Routes, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, prompt)}, nil)
	if err != nil {
		return "", fmt.Errorf("summarize %s: %w", id, err)
	}
	text = strings.TrimSpace(text)
	stored, err := conv.Append(ctx, func(st *loop.State) ([]events.Event, error) {
		return []events.Event{&events.ConversationSummarized{Summary: text, LastAt: last.UTC(), ThroughSeq: through, Route: route, CostUSD: cost}}, nil
	})
	if err != nil {
		return "", err
	}
	// Read your writes: the next message on the channel is told this
	// summary, read from the projection.
	if s.runner != nil && len(stored) > 0 {
		if err := s.runner.WaitFor(ctx, stored[len(stored)-1].Seq); err != nil {
			return "", err
		}
	}
	return text, nil
}

// conv is the writer of a stored conversation; an id the log has never
// seen is not found (and takes no place among the writers).
func (s *summarizer) conv(ctx context.Context, id string) (*loop.Conv, error) {
	if err := events.ValidID(id); err != nil {
		return nil, fmt.Errorf("conversation %q: %w", id, web.ErrNotFound)
	}
	last, err := s.log.Last(ctx, events.Conv(id).Filter())
	if err != nil {
		return nil, err
	}
	if last == 0 {
		return nil, fmt.Errorf("conversation %q: %w", id, web.ErrNotFound)
	}
	return s.convs.Get(ctx, id)
}

// Close summarizes the conversation when the owner talks on its channel,
// then closes it; the next message on the channel opens the day's next
// conversation, which is told this summary.
func (s *summarizer) Close(ctx context.Context, id string) (string, error) {
	conv, err := s.conv(ctx, id)
	if err != nil {
		return "", err
	}
	var agent, channel string
	var why string
	conv.View(func(st *loop.State) {
		agent, channel = st.Agent, st.Channel
		why = notClosable(st)
	})
	if agent == "" {
		return "", fmt.Errorf("conversation %q: %w", id, web.ErrNotFound)
	}
	if why != "" {
		return "", fmt.Errorf("%w: conversation %s %s", web.ErrRefused, id, why)
	}
	var sum string
	if notes.Talked(channel) {
		sum, err = s.Summarize(ctx, id)
		if err != nil && !errors.Is(err, errNothingToSummarize) {
			return "", err
		}
	}
	_, err = conv.Append(ctx, func(st *loop.State) ([]events.Event, error) {
		if why := notClosable(st); why != "" {
			return nil, fmt.Errorf("%w: conversation %s %s", web.ErrRefused, id, why)
		}
		return []events.Event{&events.ConversationClosed{Reason: "owner", Summary: sum}}, nil
	})
	return sum, err
}

// notClosable says why the conversation cannot be closed now, or "".
func notClosable(st *loop.State) string {
	switch {
	case st.Closed:
		return "is closed already"
	case st.OpenRun != "":
		return "has a run going: wait for it to finish"
	case len(st.Queued) > 0:
		return "has messages waiting for an answer"
	}
	return ""
}

// CloseDay summarizes and closes the conversations of days before today
// that are settled (no run open, nothing waiting). Job and delegated
// conversations are closed without a summary: nobody talks on their channel
// again. A conversation whose summary fails stays open for the next sweep.
func (s *summarizer) CloseDay(ctx context.Context) error {
	list, err := projections.ListConversations(s.db, 0)
	if err != nil {
		return err
	}
	today := s.clock().In(s.loc).Format("2006-01-02")
	var errs []error
	for _, c := range list {
		if c.Day == "" || c.Day >= today || c.Closed != nil || c.Status != projections.ConversationIdle || c.Queued > 0 {
			continue
		}
		if notes.Talked(c.Channel) {
			if _, err := s.Summarize(ctx, c.ID); err != nil && !errors.Is(err, errNothingToSummarize) {
				errs = append(errs, err)
				continue
			}
		}
		conv, err := s.convs.Get(ctx, c.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		_, err = conv.Append(ctx, func(st *loop.State) ([]events.Event, error) {
			if st.Closed || st.OpenRun != "" || len(st.Queued) > 0 {
				return nil, nil
			}
			return []events.Event{&events.ConversationClosed{Reason: "day_end"}}, nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
