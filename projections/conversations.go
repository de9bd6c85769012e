package projections

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// Conversation statuses.
const (
	ConversationIdle    = "idle"
	ConversationRunning = "running" // a run started and not finished
	ConversationClosed  = "closed"
)

// titleRunes bounds a title derived from the first message.
const titleRunes = 80

const (
	bucketConversations = "conversations"            // id → Conversation
	bucketConvByUpdated = "conversations_by_updated" // timeKey(updated) id → empty
)

// Conversation is the list view of one conversation.
type Conversation struct {
	ID      string `json:"id"`
	Agent   string `json:"agent,omitempty"`
	Channel string `json:"channel,omitempty"`
	Day     string `json:"day,omitempty"`
	// Title is the opening title, else the first message on one line, cut
	// to 80 runes.
	Title       string     `json:"title,omitempty"`
	RootID      string     `json:"root_id,omitempty"`
	RootSource  string     `json:"root_source,omitempty"`
	ParentRunID string     `json:"parent_run_id,omitempty"`
	Status      string     `json:"status"`
	Opened      time.Time  `json:"opened"`
	Updated     time.Time  `json:"updated"` // time of its latest event
	Closed      *time.Time `json:"closed,omitempty"`
	CloseReason string     `json:"close_reason,omitempty"`
	Messages    int        `json:"messages"`
	LastRunID   string     `json:"last_run_id,omitempty"`
	// ActiveRuns are the runs started and not finished, in start order.
	ActiveRuns []string `json:"active_runs,omitempty"`
	// LastSeq is the stream sequence of the conversation's latest event:
	// what its single writer expects next.
	LastSeq uint64 `json:"last_seq"`
}

// Conversations projects conversation events into Conversation views,
// indexed by update time.
type Conversations struct{}

var _ Projection = Conversations{}

func (Conversations) Name() string { return "conversations" }

func (Conversations) Buckets() []string {
	return []string{bucketConversations, bucketConvByUpdated}
}

func (Conversations) Apply(tx *bbolt.Tx, env events.Envelope) error {
	scope := events.ScopeOf(env.Subject)
	if scope.Kind() != "conv" || scope.ID() == "" {
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		return err
	}
	id := scope.ID()
	convs, index := tx.Bucket([]byte(bucketConversations)), tx.Bucket([]byte(bucketConvByUpdated))
	c := Conversation{ID: id, Opened: env.Time}
	found, err := getJSON(convs, []byte(id), &c)
	if err != nil {
		return err
	}
	if found {
		if err := index.Delete(append(timeKey(c.Updated), id...)); err != nil {
			return err
		}
	}
	switch e := e.(type) {
	case *events.ConversationOpened:
		c.Agent, c.Channel, c.Day = e.Agent, e.Channel, e.Day
		c.RootID, c.RootSource, c.ParentRunID = e.RootID, e.RootSource, e.ParentRunID
		c.Opened = env.Time
		if e.Title != "" {
			c.Title = e.Title
		}
	case *events.MessageReceived:
		c.Messages++
		if c.Title == "" {
			c.Title = truncate(oneLine(e.Text), titleRunes)
		}
	case *events.RunStarted:
		c.LastRunID = e.RunID
		if !slices.Contains(c.ActiveRuns, e.RunID) {
			c.ActiveRuns = append(c.ActiveRuns, e.RunID)
		}
		if c.Agent == "" {
			c.Agent = e.Agent
		}
	case *events.RunFinished:
		c.ActiveRuns = slices.DeleteFunc(c.ActiveRuns, func(id string) bool { return id == e.RunID })
		if len(c.ActiveRuns) == 0 {
			c.ActiveRuns = nil
		}
	case *events.ConversationClosed:
		t := env.Time
		c.Closed, c.CloseReason = &t, e.Reason
	}
	c.Updated, c.LastSeq = env.Time, env.Seq
	switch {
	case c.Closed != nil:
		c.Status = ConversationClosed
	case len(c.ActiveRuns) > 0:
		c.Status = ConversationRunning
	default:
		c.Status = ConversationIdle
	}
	if err := putJSON(convs, []byte(id), c); err != nil {
		return err
	}
	return index.Put(append(timeKey(c.Updated), id...), nil)
}

// GetConversation returns conversation id, or ErrNotFound.
func GetConversation(db *bbolt.DB, id string) (Conversation, error) {
	var c Conversation
	err := db.View(func(tx *bbolt.Tx) error {
		found, err := getJSON(tx.Bucket([]byte(bucketConversations)), []byte(id), &c)
		if err == nil && !found {
			err = ErrNotFound
		}
		return err
	})
	if err != nil {
		return Conversation{}, fmt.Errorf("get conversation %s: %w", id, err)
	}
	return c, nil
}

// ListConversations returns up to limit conversations (all when limit ≤ 0),
// most recently updated first.
func ListConversations(db *bbolt.DB, limit int) ([]Conversation, error) {
	var out []Conversation
	err := db.View(func(tx *bbolt.Tx) error {
		convs, index := tx.Bucket([]byte(bucketConversations)), tx.Bucket([]byte(bucketConvByUpdated))
		if index == nil {
			return nil
		}
		cur := index.Cursor()
		for k, _ := cur.Last(); k != nil && (limit <= 0 || len(out) < limit); k, _ = cur.Prev() {
			id := bytes.Clone(k[8:])
			var c Conversation
			found, err := getJSON(convs, id, &c)
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("index names missing conversation %q", id)
			}
			out = append(out, c)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return out, nil
}
