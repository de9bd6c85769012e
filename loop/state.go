package loop

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"iter"

	"github.com/my-agent-crew/crew/events"
)

// Roles of model-visible messages.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one entry of the model-visible history.
type Message struct {
	Role       string                   `json:"role"`
	Text       string                   `json:"text,omitempty"`
	ToolCalls  []events.ToolCallRequest `json:"tool_calls,omitempty"`
	ToolCallID string                   `json:"tool_call_id,omitempty"`
	Tool       string                   `json:"tool,omitempty"`
	IsError    bool                     `json:"is_error,omitempty"`
}

// State is what a turn needs of its conversation, folded from the
// conversation's events. It is a pure function of those events: the same
// events give the same State, whether from a snapshot or a cold replay.
type State struct {
	Conversation string    `json:"conversation"`
	Seq          uint64    `json:"seq"` // stream sequence of the last applied event
	Agent        string    `json:"agent,omitempty"`
	Channel      string    `json:"channel,omitempty"`
	Messages     []Message `json:"messages"`
	// OpenRun is the run started and not finished (a crash leaves it set).
	OpenRun string `json:"open_run,omitempty"`
	// CostUSD sums known model costs; UnknownCostCalls counts calls whose
	// cost was not reported (never counted as zero).
	CostUSD          float64 `json:"cost_usd"`
	UnknownCostCalls int     `json:"unknown_cost_calls"`
	Closed           bool    `json:"closed,omitempty"`
}

// Apply folds one event of the conversation into the state. Events at or
// below Seq are ignored, so applying a tail twice is harmless.
func (s *State) Apply(env events.Envelope) error {
	if env.Seq != 0 && env.Seq <= s.Seq {
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		return err
	}
	switch e := e.(type) {
	case *events.ConversationOpened:
		s.Agent, s.Channel = e.Agent, e.Channel
	case *events.ConversationClosed:
		s.Closed = true
	case *events.MessageReceived:
		s.Messages = append(s.Messages, Message{Role: RoleUser, Text: e.Text})
	case *events.RunStarted:
		s.OpenRun = e.RunID
	case *events.RunFinished:
		if s.OpenRun == e.RunID {
			s.OpenRun = ""
		}
	case *events.ModelCalled:
		if e.CostUSD != nil {
			s.CostUSD += *e.CostUSD
		} else if e.Error == "" {
			s.UnknownCostCalls++
		}
		if e.Error == "" {
			s.Messages = append(s.Messages, Message{Role: RoleAssistant, Text: e.Text, ToolCalls: e.ToolCalls})
		}
	case *events.ToolCompleted:
		s.Messages = append(s.Messages, Message{Role: RoleTool, Text: e.Output, ToolCallID: e.CallID, Tool: e.Tool, IsError: e.IsError})
	}
	if env.Seq != 0 {
		s.Seq = env.Seq
	}
	return nil
}

// Reader is the part of events.Log that loading state needs.
type Reader interface {
	Read(ctx context.Context, filter string, from uint64) iter.Seq2[events.Envelope, error]
	Last(ctx context.Context, filter string) (uint64, error)
}

var _ Reader = (*events.Log)(nil)

// Snapshots stores encoded States by conversation.
type Snapshots interface {
	LoadSnapshot(conversation string) (data []byte, err error) // nil, nil when none
	SaveSnapshot(conversation string, data []byte) error
}

// SnapshotEvery is how long a tail may grow before LoadState writes a new
// snapshot.
const SnapshotEvery = 256

// LoadState rebuilds a conversation's State: the latest snapshot, if any,
// plus every event stored after it. When the tail was long it saves a fresh
// snapshot so the next load stays O(new events). snaps may be nil (cold
// replay).
func LoadState(ctx context.Context, log Reader, snaps Snapshots, conversation string) (*State, error) {
	st := &State{Conversation: conversation}
	if snaps != nil {
		data, err := snaps.LoadSnapshot(conversation)
		if err != nil {
			return nil, fmt.Errorf("load state of %s: %w", conversation, err)
		}
		if data != nil {
			if err := decodeSnapshot(data, st); err != nil {
				// A snapshot is a cache: an unreadable one is replaced by a
				// cold replay, never trusted.
				st = &State{Conversation: conversation}
			}
		}
	}
	filter := events.Conv(conversation).Filter()
	last, err := log.Last(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("load state of %s: %w", conversation, err)
	}
	if last <= st.Seq {
		return st, nil
	}
	applied := 0
	for env, err := range log.Read(ctx, filter, st.Seq+1) {
		if err != nil {
			return nil, fmt.Errorf("load state of %s: %w", conversation, err)
		}
		if err := st.Apply(env); err != nil {
			return nil, fmt.Errorf("load state of %s: %w", conversation, err)
		}
		applied++
	}
	if snaps != nil && applied >= SnapshotEvery {
		data, err := encodeSnapshot(st)
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", conversation, err)
		}
		if err := snaps.SaveSnapshot(conversation, data); err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", conversation, err)
		}
	}
	return st, nil
}

// snapshotVersion changes whenever State's shape does; an older snapshot is
// then ignored (cold replay) rather than misread.
const snapshotVersion byte = 1

// Snapshots are gob: about twice as fast to decode as JSON for a long
// history, and a snapshot is a private cache, never an interface.
func encodeSnapshot(st *State) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(snapshotVersion)
	if err := gob.NewEncoder(&buf).Encode(st); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeSnapshot(data []byte, st *State) error {
	if len(data) == 0 || data[0] != snapshotVersion {
		return fmt.Errorf("snapshot version %v, want %d", data[:min(1, len(data))], snapshotVersion)
	}
	return gob.NewDecoder(bytes.NewReader(data[1:])).Decode(st)
}
