// Package summarize writes conversation summaries (R-CTX-2): on demand,
// when a conversation is closed on its channel, and at day end for the
// settled conversations of earlier days. A summary is a
// conversation_summarized event appended by the conversation's writer; the
// next conversation of the agent on the same channel is told the latest one
// as "Previous conversation" (see loop/notes).
package summarize

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/loop/notes"
)

// Conversation is what the day-end sweep needs of a listed conversation.
type Conversation struct {
	ID, Channel string
	Day         string // YYYY-MM-DD in the owner's zone; "" for none
	Settled     bool   // not closed, no run open, nothing waiting
}

// Freshness is projections.Freshness, which loop may not import: the
// read models' read-your-writes (the projections' Runner).
type Freshness interface {
	WaitFor(ctx context.Context, seq uint64) error
}

// Summarizer writes conversation summaries and closes conversations.
type Summarizer struct {
	Log    *events.Log
	Convs  *loop.Convs
	Crew   loop.Crew
	Models llm.Models
	// List lists the conversations the day-end sweep looks at (the
	// conversations projection).
	List func(ctx context.Context) ([]Conversation, error)
	// Fresh, when set, waits until the read models have applied a
	// stream sequence: the next message on the channel is told the
	// summary, read from the summaries projection (read your writes).
	Fresh Freshness
	// Clock is the time and the owner's zone, which date a summary and
	// say which day has ended; nil: the wall clock in UTC.
	Clock loop.Clock
}

// clock is s.Clock, or the wall clock in UTC.
func (s *Summarizer) clock() (now time.Time, zone *time.Location) {
	c := s.Clock
	if c == nil {
		c = loop.WallClock{}
	}
	return c.Now(), cmp.Or(c.Location(), time.UTC)
}

// Summarize makes and stores a summary of the conversation as it is now.
func (s *Summarizer) Summarize(ctx context.Context, id string) (string, error) {
	conv, err := s.conv(ctx, id)
	if err != nil {
		return "", err
	}
	var agentID string
	var lines []notes.Line
	var last time.Time
	var through, summarizedThrough uint64
	for env, err := range s.Log.Read(ctx, events.Conv(id).Filter(), 1) {
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
			if e.InTurn() && e.Error == "" && strings.TrimSpace(e.Text) != "" {
				lines = append(lines, notes.Line{At: env.Time, Role: agentID, Text: e.Text})
				last, through = env.Time, env.Seq
			}
		}
	}
	if agentID == "" {
		return "", fmt.Errorf("conversation %q: %w", id, ErrUnknownConversation)
	}
	if len(lines) == 0 || through <= summarizedThrough {
		return "", fmt.Errorf("conversation %s: %w", id, ErrNothingToSummarize)
	}
	agent, ok := s.Crew.Agent(agentID)
	if !ok {
		return "", fmt.Errorf("summarize %s: agent %q is not loaded", id, agentID)
	}
	now, zone := s.clock()
	prompt := notes.SummaryPrompt(notes.Transcript(lines, zone), now, zone)
	a, err := llm.Ask(ctx, s.Models, agent.Routes, llm.Request{Purpose: events.PurposeSummary, Payer: llm.Payer{Agent: agentID, Conversation: id},
		Messages: []llm.Message{llm.Text(llm.RoleUser, prompt)}}, nil)
	if err != nil {
		return "", fmt.Errorf("summarize %s: %w", id, err)
	}
	text := strings.TrimSpace(a.Text)
	stored, err := conv.Append(ctx, func(st *loop.State) ([]events.Event, error) {
		return []events.Event{
			loop.HarnessCall(events.PurposeSummary, a),
			&events.ConversationSummarized{Summary: text, LastAt: last.UTC(), ThroughSeq: through, Route: a.Route, CostUSD: a.CostUSD},
		}, nil
	})
	if err != nil {
		return "", err
	}
	// Read your writes: the next message on the channel is told this
	// summary, read from the projection.
	if s.Fresh != nil && len(stored) > 0 {
		if err := s.Fresh.WaitFor(ctx, stored[len(stored)-1].Seq); err != nil {
			return "", err
		}
	}
	return text, nil
}

// conv is the writer of a stored conversation; an id the log has never
// seen is not found (and takes no place among the writers).
func (s *Summarizer) conv(ctx context.Context, id string) (*loop.Conv, error) {
	if err := events.ValidID(id); err != nil {
		return nil, fmt.Errorf("conversation %q: %w", id, ErrUnknownConversation)
	}
	last, err := s.Log.Last(ctx, events.Conv(id).Filter())
	if err != nil {
		return nil, err
	}
	if last == 0 {
		return nil, fmt.Errorf("conversation %q: %w", id, ErrUnknownConversation)
	}
	return s.Convs.Get(ctx, id)
}

// Close summarizes the conversation when the owner talks on its channel,
// then closes it; the next message on the channel opens the day's next
// conversation, which is told this summary.
func (s *Summarizer) Close(ctx context.Context, id string) (string, error) {
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
		return "", fmt.Errorf("conversation %q: %w", id, ErrUnknownConversation)
	}
	if why != "" {
		return "", fmt.Errorf("%w: conversation %s %s", ErrNotClosable, id, why)
	}
	var sum string
	if notes.Talked(channel) {
		sum, err = s.Summarize(ctx, id)
		if err != nil && !errors.Is(err, ErrNothingToSummarize) {
			return "", err
		}
	}
	_, err = conv.Append(ctx, func(st *loop.State) ([]events.Event, error) {
		if why := notClosable(st); why != "" {
			return nil, fmt.Errorf("%w: conversation %s %s", ErrNotClosable, id, why)
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
func (s *Summarizer) CloseDay(ctx context.Context) error {
	list, err := s.List(ctx)
	if err != nil {
		return err
	}
	now, zone := s.clock()
	today := now.In(zone).Format("2006-01-02")
	var errs []error
	for _, c := range list {
		if c.Day == "" || c.Day >= today || !c.Settled {
			continue
		}
		if notes.Talked(c.Channel) {
			if _, err := s.Summarize(ctx, c.ID); err != nil && !errors.Is(err, ErrNothingToSummarize) {
				errs = append(errs, err)
				continue
			}
		}
		conv, err := s.Convs.Get(ctx, c.ID)
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
