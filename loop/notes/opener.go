package notes

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools/kit"
)

// LatestSummary returns the summary of the latest other conversation than
// exclude of agent on channel; ok false when there is none. It is a read
// of a projection, but what the opener makes of it is stored with the
// message (TurnNotes), so a replay reads the same notes.
type LatestSummary func(agent, channel, exclude string) (s Summary, ok bool, err error)

// Opener computes what travels with every turn-opening message, whatever
// door it came through (web, Telegram, the API, a job, a delegation): the
// kit command's prompt for "/name args", and the turn notes — the previous
// conversation's summary on the same channel and the agent's notes of
// yesterday and today, told only as far as they changed since this
// conversation was last told (R-CTX-2). A failure to read them costs the
// notes, never the message.
func Opener(homeDir string, crew loop.Crew, latest LatestSummary, loc *time.Location, clock func() time.Time, logger *slog.Logger) loop.Opener {
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
		if Talked(o.Channel) {
			sum, ok, err := latest(o.Agent, o.Channel, o.Conversation)
			if err != nil {
				logger.Warn("previous conversation not read", "conversation", o.Conversation, "err", err)
			}
			if ok {
				prev = Summary{Channel: o.Channel, Conversation: sum.Conversation, Text: sum.Text, LastAt: sum.LastAt}
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
