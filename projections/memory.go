package projections

import (
	"fmt"
	"time"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// Proposal statuses.
const (
	ProposalPending    = "pending"     // waits for a human
	ProposalApplied    = "applied"     // approved or auto-applied: MEMORY.md is New
	ProposalRejected   = "rejected"    // MEMORY.md stayed Old
	ProposalRolledBack = "rolled_back" // was applied; MEMORY.md is Old again
)

// Buckets of the memory projection: proposal id → Proposal, and the
// big-endian stream sequence of memory_proposed → proposal id (the
// order of the list).
const (
	bucketProposals      = "memory_proposals"
	bucketProposalsBySeq = "memory_proposals_by_seq"
)

// Proposal is one proposed rewrite of an agent's MEMORY.md (R-MEM-2) with
// what became of it. Old is the file when proposed, kept for rollback.
type Proposal struct {
	ID      string   `json:"id"`
	Agent   string   `json:"agent"`
	Kind    string   `json:"kind"` // events.ProposalAddOnly, …
	Reason  string   `json:"reason,omitempty"`
	Status  string   `json:"status"`
	Auto    bool     `json:"auto"` // applied without a human
	Days    []string `json:"days"` // the notes read, YYYY-MM-DD
	Trigger string   `json:"trigger"`
	Route   string   `json:"route,omitempty"`
	CostUSD *float64 `json:"cost_usd,omitempty"`
	// Proposed is when it was filed; Decided when it was approved,
	// rejected or auto-applied, by Decision on DecisionChannel.
	Proposed        time.Time  `json:"proposed"`
	Decided         *time.Time `json:"decided,omitempty"`
	Decision        string     `json:"decision,omitempty"`
	DecisionChannel string     `json:"decision_channel,omitempty"`
	RolledBack      *time.Time `json:"rolled_back,omitempty"`
	RollbackChannel string     `json:"rollback_channel,omitempty"`
	Old             string     `json:"old,omitempty"`
	New             string     `json:"new,omitempty"`
	LastSeq         uint64     `json:"last_seq"`
}

// Memory projects the memory_* events of agent scopes into Proposals.
type Memory struct{}

var _ Projection = Memory{}

func (Memory) Name() string { return "memory" }

func (Memory) Buckets() []string { return []string{bucketProposals, bucketProposalsBySeq} }

func (Memory) Apply(tx *bbolt.Tx, env events.Envelope) error {
	if events.ScopeOf(env.Subject).Kind() != "agent" {
		return nil
	}
	switch env.Type {
	case events.TypeMemoryProposed, events.TypeMemoryProposalDecided, events.TypeMemoryRolledBack:
	default:
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		return err
	}
	b := tx.Bucket([]byte(bucketProposals))
	t := env.Time
	switch e := e.(type) {
	case *events.MemoryProposed:
		if b.Get([]byte(e.ProposalID)) != nil {
			return nil // an id used twice: the first proposal stands
		}
		days := e.Days
		if days == nil {
			days = []string{}
		}
		p := Proposal{ID: e.ProposalID, Agent: e.Agent, Kind: e.Kind, Reason: e.Reason, Status: ProposalPending, Days: days,
			Trigger: e.Trigger, Route: e.Route, CostUSD: e.CostUSD, Proposed: t, Old: e.Old, New: e.New, LastSeq: env.Seq}
		if err := tx.Bucket([]byte(bucketProposalsBySeq)).Put(u64(env.Seq), []byte(e.ProposalID)); err != nil {
			return err
		}
		return putJSON(b, []byte(p.ID), p)
	case *events.MemoryProposalDecided:
		var p Proposal
		found, err := getJSON(b, []byte(e.ProposalID), &p)
		if err != nil || !found || p.Status != ProposalPending {
			return err // unknown, or decided already: the first decision stands
		}
		p.Decided, p.Decision, p.DecisionChannel, p.LastSeq = &t, e.Decision, e.Channel, env.Seq
		switch e.Decision {
		case events.ProposalApproved:
			p.Status = ProposalApplied
		case events.ProposalAutoApplied:
			p.Status, p.Auto = ProposalApplied, true
		default:
			p.Status = ProposalRejected
		}
		return putJSON(b, []byte(p.ID), p)
	case *events.MemoryRolledBack:
		var p Proposal
		found, err := getJSON(b, []byte(e.ProposalID), &p)
		if err != nil || !found || p.Status != ProposalApplied {
			return err
		}
		p.Status, p.RolledBack, p.RollbackChannel, p.LastSeq = ProposalRolledBack, &t, e.Channel, env.Seq
		return putJSON(b, []byte(p.ID), p)
	}
	return nil
}

// ListProposals returns the proposals of agent (every agent's when agent
// is ""), newest first.
func ListProposals(db *bbolt.DB, agent string) ([]Proposal, error) {
	var out []Proposal
	err := db.View(func(tx *bbolt.Tx) error {
		idx, b := tx.Bucket([]byte(bucketProposalsBySeq)), tx.Bucket([]byte(bucketProposals))
		if idx == nil || b == nil {
			return nil
		}
		c := idx.Cursor()
		for k, id := c.Last(); k != nil; k, id = c.Prev() {
			var p Proposal
			found, err := getJSON(b, id, &p)
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("proposal %q is indexed but missing", id)
			}
			if agent == "" || p.Agent == agent {
				out = append(out, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list proposals: %w", err)
	}
	return out, nil
}

// GetProposal returns proposal id, or ErrNotFound.
func GetProposal(db *bbolt.DB, id string) (Proposal, error) {
	return get[Proposal](db, bucketProposals, "proposal", id)
}
