package projections

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// Buckets of the memory writes projection (R-X-7): every memory, fact and
// wiki write a tool recorded with its provenance, by stream sequence, and
// the agent of each conversation.
const (
	bucketMemWrites     = "memwrites"
	bucketMemWriteConvs = "memwrite_convs"
)

// MemoryWrite is one write of an agent's memory, a fact or a wiki page:
// which run and tool call made it, and the untrusted content its run had
// read first ("" for none).
type MemoryWrite struct {
	At           time.Time `json:"at"`
	Agent        string    `json:"agent"`
	Conversation string    `json:"conversation"`
	RunID        string    `json:"run_id"`
	CallID       string    `json:"call_id"`
	Tool         string    `json:"tool"`
	Path         string    `json:"path"`
	Untrusted    string    `json:"untrusted,omitempty"`
}

// MemoryWrites projects the provenance the memory tools record with their
// results (tool_completed meta "provenance", or a script's nested_call
// "provenance").
type MemoryWrites struct{}

var _ Projection = MemoryWrites{}

func (MemoryWrites) Name() string { return "memory_writes" }

// Wants: conversation openings, tool results and a script's calls.
func (MemoryWrites) Wants(kind, typ string) bool {
	return kind == "conv" && (typ == events.TypeConversationOpened || typ == events.TypeToolCompleted || typ == events.TypeNestedCall)
}

func (MemoryWrites) Buckets() []string { return []string{bucketMemWrites, bucketMemWriteConvs} }

func (MemoryWrites) Apply(tx *Tx, env events.Envelope) error {
	scope := events.ScopeOf(env.Subject)
	if scope.Kind() != "conv" {
		return nil
	}
	switch env.Type {
	case events.TypeConversationOpened, events.TypeToolCompleted, events.TypeNestedCall:
	default:
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		return err
	}
	convs := tx.Bucket([]byte(bucketMemWriteConvs))
	switch e := e.(type) {
	case *events.ConversationOpened:
		return convs.Put([]byte(scope.ID()), []byte(e.Agent))
	case *events.ToolCompleted:
		raw, ok := e.Meta["provenance"]
		if !ok || e.IsError {
			return nil
		}
		return putWrite(tx, convs, env, scope.ID(), e.Tool, raw)
	case *events.NestedCall:
		if e.Provenance == nil || e.IsError {
			return nil
		}
		return putWrite(tx, convs, env, scope.ID(), e.Tool, e.Provenance)
	}
	return nil
}

// putWrite records one memory write from the provenance its call kept.
func putWrite(tx *Tx, convs *bbolt.Bucket, env events.Envelope, conv, tool string, raw any) error {
	b, _ := json.Marshal(raw)
	var wire struct {
		Path      string `json:"path"`
		RunID     string `json:"run_id"`
		CallID    string `json:"call_id"`
		Untrusted string `json:"untrusted"`
	}
	if err := json.Unmarshal(b, &wire); err != nil {
		return fmt.Errorf("provenance of %s seq %d: %w", env.Subject, env.Seq, err)
	}
	w := MemoryWrite{At: env.Time.UTC(), Agent: string(convs.Get([]byte(conv))), Conversation: conv,
		RunID: wire.RunID, CallID: wire.CallID, Tool: tool, Path: wire.Path, Untrusted: wire.Untrusted}
	return tx.putJSON(tx.Bucket([]byte(bucketMemWrites)), u64(env.Seq), w)
}

// ListMemoryWrites returns up to limit writes, newest first; with
// untrustedOnly only those made after untrusted content; agent "" is
// every agent.
func ListMemoryWrites(db *bbolt.DB, agent string, untrustedOnly bool, limit int) ([]MemoryWrite, error) {
	out := []MemoryWrite{}
	err := db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketMemWrites))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Last(); k != nil && len(out) < limit; k, v = c.Prev() {
			var w MemoryWrite
			if err := json.Unmarshal(v, &w); err != nil {
				return fmt.Errorf("memory write %x: %w", k, err)
			}
			if (agent == "" || w.Agent == agent) && (!untrustedOnly || w.Untrusted != "") {
				out = append(out, w)
			}
		}
		return nil
	})
	return out, err
}
