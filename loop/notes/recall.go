package notes

import (
	"context"
	"log/slog"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools/recall"
)

// EarlierKey is the told key of the "earlier, on this topic" section: it
// is told once a conversation.
const EarlierKey = "recall:earlier"

// EarlierTitle heads the section.
const EarlierTitle = "Earlier, on this topic (found by recall for the owner's first message; recall_open reads around a hit)"

// Earlier finds what the crew said or wrote before on the topic of text,
// the first message of conversation conv of agent: the few hits the
// agent's seat reaches that clear the relevance threshold, none of conv.
type Earlier func(ctx context.Context, agent, conv, text string) ([]recall.Hit, error)

// earlierTimeout bounds the search: it runs while the message is stored.
const earlierTimeout = 2 * time.Second

// WithEarlier adds the "earlier, on this topic" section to the turn notes
// next makes for a conversation's first message from the owner (web,
// API, Telegram): recall's top hits for it, each with its source and its
// snippet fenced (past words may hold someone else's), capped like the
// other sections. It is recorded as told (EarlierKey), so it is told once
// a conversation; being stored with the message, a replay reads it as
// the run did. A search that fails or finds nothing adds nothing.
func WithEarlier(next loop.Opener, earlier Earlier, logger *slog.Logger) loop.Opener {
	return func(ctx context.Context, o loop.Opening) loop.Opened {
		out := next(ctx, o)
		if earlier == nil || !o.First || o.Steer || !Talked(o.Channel) {
			return out
		}
		if _, told := o.Told[EarlierKey]; told {
			return out
		}
		ctx, cancel := context.WithTimeout(ctx, earlierTimeout)
		defer cancel()
		hits, err := earlier(ctx, o.Agent, o.Conversation, o.Text)
		if err != nil {
			logger.Warn("earlier on this topic not found; the message is stored without it", "conversation", o.Conversation, "err", err)
			return out
		}
		if len(hits) == 0 {
			return out
		}
		it := Item{Key: EarlierKey, Title: EarlierTitle, Content: recall.Format(hits, true)}
		block := it.Title + ":\n" + capped(it.Content, it)
		told := events.NoteTold{Key: it.Key, Len: len(it.Content), Digest: Digest(it.Content)}
		if out.Notes == nil {
			out.Notes = &events.TurnNotes{Text: block, Told: []events.NoteTold{told}}
			return out
		}
		n := *out.Notes
		n.Text += "\n\n" + block
		n.Told = append(append([]events.NoteTold(nil), n.Told...), told)
		out.Notes = &n
		return out
	}
}
