package projections

import (
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// Proposal statuses (events.FoldProposal decides them).
const (
	ProposalPending    = events.ProposalPending
	ProposalApplied    = events.ProposalApplied
	ProposalRejected   = events.ProposalRejected
	ProposalRolledBack = events.ProposalRolledBack
)

// Buckets of the memory projection: proposal id → Proposal, and the
// big-endian stream sequence of memory_proposed → proposal id (the
// order of the list).
const (
	bucketProposals      = "memory_proposals"
	bucketProposalsBySeq = "memory_proposals_by_seq"
)

// Proposal is one proposed rewrite of an agent's MEMORY.md (R-MEM-2) with
// what became of it.
type Proposal = events.ProposalRecord

// Memory projects the memory_* events of agent scopes into Proposals.
type Memory struct{}

var _ Projection = Memory{}

func (Memory) Name() string { return "memory" }

// Wants: an agent's proposals and their decisions.
func (Memory) Wants(kind, typ string) bool {
	return kind == "agent" && (typ == events.TypeMemoryProposed || typ == events.TypeMemoryProposalDecided || typ == events.TypeMemoryRolledBack)
}

func (Memory) Buckets() []string { return []string{bucketProposals, bucketProposalsBySeq} }

func (Memory) Apply(tx *Tx, env events.Envelope) error {
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
	id := events.ProposalOf(e)
	var rec *Proposal
	var p Proposal
	if found, err := tx.getJSON(b, []byte(id), &p); err != nil {
		return err
	} else if found {
		rec = &p
	}
	next, changed := events.FoldProposal(rec, env, e)
	if !changed {
		return nil
	}
	if rec == nil { // newly proposed: it joins the list in stream order
		if err := tx.Bucket([]byte(bucketProposalsBySeq)).Put(u64(env.Seq), []byte(next.ID)); err != nil {
			return err
		}
	}
	return tx.putJSON(b, []byte(next.ID), next)
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
