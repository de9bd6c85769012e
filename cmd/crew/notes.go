package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/memory"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/tools/kit"
	"go.etcd.io/bbolt"
)

// opener computes what travels with every turn-opening message, whatever
// door it came through (web, Telegram, the API, a job, a delegation): the
// kit command's prompt for "/name args", and the turn notes — the previous
// conversation's summary on the same channel and the agent's notes of
// yesterday and today, told only as far as they changed since this
// conversation was last told (R-CTX-2). A failure to read them costs the
// notes, never the message.
func opener(homeDir string, cr *liveCrew, db *bbolt.DB, loc *time.Location, clock func() time.Time, logger *slog.Logger) loop.Opener {
	return func(ctx context.Context, o loop.Opening) loop.Opened {
		var out loop.Opened
		a, ok := cr.agent(o.Agent)
		if !ok {
			return out
		}
		if !o.Steer {
			cmds, err := kit.Commands(homeDir, a.Dir)
			if err != nil {
				logger.Warn("kit commands not read", "agent", o.Agent, "err", err)
			}
			if name, prompt, ok := kit.Expand(cmds, o.Text); ok {
				out.Command, out.Prompt = name, prompt
			}
		}
		var prev memory.Summary
		if talked(o.Channel) {
			sum, ok, err := projections.LatestSummary(db, o.Agent, o.Channel, o.Conversation)
			if err != nil {
				logger.Warn("previous conversation not read", "conversation", o.Conversation, "err", err)
			}
			if ok {
				prev = memory.Summary{Channel: o.Channel, Conversation: sum.Conversation, Text: sum.Summary, LastAt: sum.LastAt}
			}
		}
		if a.Persona != "" {
			return out // a kit sub-agent keeps no memory of its own
		}
		items, err := memory.Items(a.Dir, clock(), loc, prev)
		if err != nil {
			logger.Warn("turn notes not made", "conversation", o.Conversation, "err", err)
			return out
		}
		out.Notes = memory.Compose(o.Told, items)
		return out
	}
}
