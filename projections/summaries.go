package projections

import (
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
		var prev events.ChannelSummary
		if _, err := tx.getJSON(latest, key, &prev); err != nil {
			return err
		}
		if prev.Conversation != "" && prev.Conversation != id && prev.LastAt.After(e.LastAt) {
			return nil // an older conversation summarised late
		}
		return tx.putJSON(latest, key, events.ChannelSummary{Conversation: id, Agent: c.Agent, Channel: c.Channel,
			Summary: e.Summary, LastAt: e.LastAt, ThroughSeq: e.ThroughSeq})
	}
	return nil
}

// ChannelSummaries reads the summaries projection of DB: the turn notes'
// previous conversations (loop/notes.Summaries).
type ChannelSummaries struct{ DB *bbolt.DB }

// Latest returns the latest summary of another conversation of agent on
// channel than exclude; ok false when there is none.
func (c ChannelSummaries) Latest(agent, channel, exclude string) (s events.ChannelSummary, ok bool, err error) {
	err = c.DB.View(func(tx *bbolt.Tx) error {
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
