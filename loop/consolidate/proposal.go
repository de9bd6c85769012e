package consolidate

import (
	"context"
	"time"

	"github.com/my-agent-crew/crew/events"
)

// Proposal statuses.
const (
	StatusPending    = "pending"     // waits for a human
	StatusApplied    = "applied"     // approved or auto-applied: MEMORY.md is New
	StatusRejected   = "rejected"    // MEMORY.md stayed Old
	StatusRolledBack = "rolled_back" // was applied; MEMORY.md is Old again
)

// Proposal is one proposed rewrite of an agent's MEMORY.md (R-MEM-2) with
// what became of it, folded from the agent's scope, with its line diff and
// how many lines it adds and removes. Old is the file when proposed, kept
// for rollback. The fields and their JSON are those of the memory
// projection's view (projections.Proposal), which the web pages read.
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
	Added           int        `json:"added"`
	Removed         int        `json:"removed"`
	Diff            []Line     `json:"diff,omitempty"`
}

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
	t := env.Time
	switch e := e.(type) {
	case *events.MemoryProposed:
		if f.byID[e.ProposalID] != nil {
			return nil // an id used twice: the first proposal stands
		}
		days := e.Days
		if days == nil {
			days = []string{}
		}
		f.byID[e.ProposalID] = &Proposal{ID: e.ProposalID, Agent: e.Agent, Kind: e.Kind, Reason: e.Reason, Status: StatusPending, Days: days,
			Trigger: e.Trigger, Route: e.Route, CostUSD: e.CostUSD, Proposed: t, Old: e.Old, New: e.New, LastSeq: env.Seq}
		f.order = append(f.order, e.ProposalID)
	case *events.MemoryProposalDecided:
		p := f.byID[e.ProposalID]
		if p == nil || p.Status != StatusPending {
			return nil // unknown, or decided already: the first decision stands
		}
		p.Decided, p.Decision, p.DecisionChannel, p.LastSeq = &t, e.Decision, e.Channel, env.Seq
		switch e.Decision {
		case events.ProposalApproved:
			p.Status = StatusApplied
		case events.ProposalAutoApplied:
			p.Status, p.Auto = StatusApplied, true
		default:
			p.Status = StatusRejected
		}
	case *events.MemoryRolledBack:
		p := f.byID[e.ProposalID]
		if p == nil || p.Status != StatusApplied {
			return nil
		}
		p.Status, p.RolledBack, p.RollbackChannel, p.LastSeq = StatusRolledBack, &t, e.Channel, env.Seq
	}
	return nil
}
