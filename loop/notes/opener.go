package notes

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools/canvas"
	"github.com/my-agent-crew/crew/tools/kit"
)

// Summaries are the conversations' summaries by channel (the summaries
// projection: projections.ChannelSummaries). Latest is the summary of the
// latest other conversation than exclude of agent on channel; ok false
// when there is none. It is a read of a projection, but what the opener
// makes of it is stored with the message (TurnNotes), so a replay reads
// the same notes.
type Summaries interface {
	Latest(agent, channel, exclude string) (s events.ChannelSummary, ok bool, err error)
}

// Config is what the turn notes are made from.
type Config struct {
	Home      string    // the home: the kit commands it declares
	Crew      loop.Crew // the agents, each with its folder of notes
	Summaries Summaries // nil: no previous conversation is told
	// Canvas tells what changed in the conversation's canvases (nil: no
	// canvas notes).
	Canvas *canvas.Service
	// Earlier finds the "earlier, on this topic" hits (nil: none).
	Earlier  Earlier
	Location *time.Location   // the owner's days (nil: UTC)
	Clock    func() time.Time // nil: time.Now
	Logger   *slog.Logger     // where a note that could not be made is said (nil: nowhere)
}

// New is the crew's opener: the kit command and the turn notes (opener),
// then the canvas notes (WithCanvas) and the "earlier, on this topic"
// section (WithEarlier).
func New(c Config) loop.Opener {
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	open := opener(c.Home, c.Crew, c.Summaries, c.Location, c.Clock, c.Logger)
	if c.Canvas != nil {
		open = WithCanvas(open, c.Canvas, c.Logger)
	}
	return WithEarlier(open, c.Earlier, c.Logger)
}

// opener computes what travels with every turn-opening message, whatever
// door it came through (web, Telegram, the API, a job, a delegation): the
// kit command's prompt for "/name args", and the turn notes — the previous
// conversation's summary on the same channel and the agent's notes of
// yesterday and today, told only as far as they changed since this
// conversation was last told (R-CTX-2). A failure to read them costs the
// notes, never the message.
func opener(homeDir string, crew loop.Crew, sums Summaries, loc *time.Location, clock func() time.Time, logger *slog.Logger) loop.Opener {
	return func(ctx context.Context, o loop.Opening) loop.Opened {
		var out loop.Opened
		a, ok := crew.Agent(o.Agent)
		if !ok {
			return out
		}
		// A steer's words may be a kit command too (R-IN-3: one sent while
		// a turn runs is taken in at its next tool boundary).
		if strings.HasPrefix(strings.TrimSpace(o.Text), "/") {
			cmds, err := kit.Commands(homeDir, a.Dir)
			if err != nil {
				logger.Warn("kit commands not read", "agent", o.Agent, "err", err)
			}
			if name, prompt, ok := kit.Expand(cmds, o.Text); ok {
				out.Command, out.Prompt = name, prompt
			}
		}
		var prev Summary
		if Talked(o.Channel) && sums != nil {
			sum, ok, err := sums.Latest(o.Agent, o.Channel, o.Conversation)
			if err != nil {
				logger.Warn("previous conversation not read", "conversation", o.Conversation, "err", err)
			}
			if ok {
				prev = Summary{Channel: o.Channel, Conversation: sum.Conversation, Text: sum.Summary, LastAt: sum.LastAt}
			}
		}
		if a.Persona != "" {
			return out // a kit sub-agent keeps no memory of its own
		}
		items, err := Items(a.Dir, clock(), loc, prev)
		if err != nil {
			logger.Warn("turn notes not made", "conversation", o.Conversation, "err", err)
			return out
		}
		out.Notes = Compose(o.Told, items)
		return out
	}
}

// Talked reports whether the owner talks on channel, so the next
// conversation there should hear how the last one went.
func Talked(channel string) bool {
	return channel == "web" || channel == "api" || strings.HasPrefix(channel, "telegram")
}
