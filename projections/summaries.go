package projections

import (
	"time"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// Buckets of the summaries projection: conversation id → where it talks
// (agent and channel), and "<agent>\x00<channel>" → the latest summary
// made on that channel.
const (
	bucketSummaryConvs  = "summary_convs"
	bucketSummaryLatest = "summary_latest"
)

// ChannelSummary is the latest conversation summary of an agent on a
// channel: what the next conversation there is told as "Previous
// conversation" (R-CTX-2).
type ChannelSummary struct {
	Conversation string    `json:"conversation"`
	Agent        string    `json:"agent"`
	Channel      string    `json:"channel"`
	Summary      string    `json:"summary"`
	LastAt       time.Time `json:"last_at"`
	ThroughSeq   uint64    `json:"through_seq"`
}

// Summaries projects conversation_summarized events by agent and channel.
type Summaries struct{}

var _ Projection = Summaries{}

func (Summaries) Name() string { return "summaries" }

// Wants: openings and summaries of conversations.
func (Summaries) Wants(kind, typ string) bool {
	return kind == "conv" && (typ == events.TypeConversationOpened || typ == events.TypeConversationSummarized)
}

func (Summaries) Buckets() []string { return []string{bucketSummaryConvs, bucketSummaryLatest} }

type summaryConv struct {
	Agent   string `json:"agent"`
	Channel string `json:"channel"`
}

func (Summaries) Apply(tx *Tx, env events.Envelope) error {
	scope := events.ScopeOf(env.Subject)
	if scope.Kind() != "conv" || scope.ID() == "" {
		return nil
	}
	id := scope.ID()
	switch env.Type {
	case events.TypeConversationOpened, events.TypeConversationSummarized:
	default:
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		return err
	}
	convs := tx.Bucket([]byte(bucketSummaryConvs))
	switch e := e.(type) {
	case *events.ConversationOpened:
		return tx.putJSON(convs, []byte(id), summaryConv{Agent: e.Agent, Channel: e.Channel})
	case *events.ConversationSummarized:
		var c summaryConv
		found, err := tx.getJSON(convs, []byte(id), &c)
		if err != nil || !found {
			return err
		}
		latest := tx.Bucket([]byte(bucketSummaryLatest))
		key := []byte(c.Agent + "\x00" + c.Channel)
		var prev ChannelSummary
		if _, err := tx.getJSON(latest, key, &prev); err != nil {
			return err
		}
		if prev.Conversation != "" && prev.Conversation != id && prev.LastAt.After(e.LastAt) {
			return nil // an older conversation summarised late
		}
		return tx.putJSON(latest, key, ChannelSummary{Conversation: id, Agent: c.Agent, Channel: c.Channel,
			Summary: e.Summary, LastAt: e.LastAt, ThroughSeq: e.ThroughSeq})
	}
	return nil
}

// LatestSummary returns the latest summary of another conversation of
// agent on channel than exclude; ok false when there is none.
func LatestSummary(db *bbolt.DB, agent, channel, exclude string) (s ChannelSummary, ok bool, err error) {
	err = db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketSummaryLatest))
		if b == nil {
			return nil // not projected yet: no summary
		}
		found, err := getJSON(b, []byte(agent+"\x00"+channel), &s)
		ok = found && s.Conversation != exclude
		return err
	})
	return s, ok, err
}
