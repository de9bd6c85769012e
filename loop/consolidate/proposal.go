package consolidate

import (
	"context"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
)

// Proposal statuses (events.FoldProposal decides them).
const (
	StatusPending    = events.ProposalPending
	StatusApplied    = events.ProposalApplied
	StatusRejected   = events.ProposalRejected
	StatusRolledBack = events.ProposalRolledBack
)

// Proposal is one proposed rewrite of an agent's MEMORY.md (R-MEM-2) with
// what became of it, folded from the agent's scope, with its line diff
// (view.Proposal, which the web gateway decodes).
type Proposal = view.Proposal

// withDiff is p with its line diff and counts.
func withDiff(p Proposal) Proposal {
	p.Diff, p.Added, p.Removed = Diff(p.Old, p.New), 0, 0
	for _, l := range p.Diff {
		switch l.Op {
		case Add:
			p.Added++
		case Del:
			p.Removed++
		}
	}
	return p
}

// proposals is the fold of the memory events read from agent scopes:
// the same rules as the memory projection, so a decision is taken on the
// log itself and the service needs no read model.
type proposals struct {
	byID  map[string]*Proposal
	order []string // ids by memory_proposed, oldest first
	last  uint64   // the last sequence read: the next append's expectation
}

// fold reads the events matching filter (one agent scope, or all) into
// proposals.
func (s *Service) fold(ctx context.Context, filter string) (proposals, error) {
	f := proposals{byID: map[string]*Proposal{}}
	for env, err := range s.cfg.Log.Read(ctx, filter, 1) {
		if err != nil {
			return f, err
		}
		f.last = env.Seq
		if err := f.apply(env); err != nil {
			return f, err
		}
	}
	return f, nil
}

func (f *proposals) apply(env events.Envelope) error {
	switch env.Type {
	case events.TypeMemoryProposed, events.TypeMemoryProposalDecided, events.TypeMemoryRolledBack:
	default:
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		return err
	}
	id := events.ProposalOf(e)
	var rec *events.ProposalRecord
	if p := f.byID[id]; p != nil {
		rec = &p.ProposalRecord
	}
	next, changed := events.FoldProposal(rec, env, e)
	if changed && rec == nil {
		f.byID[id] = &Proposal{ProposalRecord: *next}
		f.order = append(f.order, id)
	}
	return nil
}
