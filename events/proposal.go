package events

import "time"

// What became of a memory proposal (R-MEM-2), folded from its events. A
// rejected proposal's status is the decision's own word, ProposalRejected.
const (
	ProposalPending    = "pending"     // waits for a human
	ProposalApplied    = "applied"     // approved or auto-applied: MEMORY.md is New
	ProposalRolledBack = "rolled_back" // was applied; MEMORY.md is Old again
)

// ProposalRecord is one proposed rewrite of an agent's MEMORY.md (or of
// its AGENTS.md or SOUL.md, File) with what
// became of it. Old is the file when proposed, kept for rollback. The
// memory projection stores it and consolidation decides on it; both fold
// it with FoldProposal, so the rules are written once.
type ProposalRecord struct {
	ID      string   `json:"id"`
	Agent   string   `json:"agent"`
	Kind    string   `json:"kind"` // ProposalAddOnly, …
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
	// File, Tool, RunID, CallID, Conversation, Untrusted: as in
	// MemoryProposed ("" file is MEMORY.md).
	File         string `json:"file,omitempty"`
	Tool         string `json:"tool,omitempty"`
	RunID        string `json:"run_id,omitempty"`
	CallID       string `json:"call_id,omitempty"`
	Conversation string `json:"conversation,omitempty"`
	Untrusted    string `json:"untrusted,omitempty"`
}

// FileName is the file r rewrites: MEMORY.md, AGENTS.md or SOUL.md.
func (r ProposalRecord) FileName() string {
	if r.File == "" {
		return "MEMORY.md"
	}
	return r.File
}

// FoldProposal applies e, decoded from env, to rec: the record of e's
// proposal so far, nil when there is none yet. It returns the record to
// keep and whether anything changed. The first proposal of an id stands,
// and so does its first decision; only an applied proposal rolls back.
func FoldProposal(rec *ProposalRecord, env Envelope, e Event) (*ProposalRecord, bool) {
	t := env.Time
	switch e := e.(type) {
	case *MemoryProposed:
		if rec != nil {
			return rec, false // an id used twice: the first proposal stands
		}
		days := e.Days
		if days == nil {
			days = []string{}
		}
		return &ProposalRecord{ID: e.ProposalID, Agent: e.Agent, Kind: e.Kind, Reason: e.Reason, Status: ProposalPending, Days: days,
			Trigger: e.Trigger, Route: e.Route, CostUSD: e.CostUSD, Proposed: t, Old: e.Old, New: e.New, LastSeq: env.Seq,
			File: e.File, Tool: e.Tool, RunID: e.Run, CallID: e.CallID, Conversation: e.Conversation, Untrusted: e.Untrusted}, true
	case *MemoryProposalDecided:
		if rec == nil || rec.Status != ProposalPending {
			return rec, false // unknown, or decided already: the first decision stands
		}
		rec.Decided, rec.Decision, rec.DecisionChannel, rec.LastSeq = &t, e.Decision, e.Channel, env.Seq
		switch e.Decision {
		case ProposalApproved:
			rec.Status = ProposalApplied
		case ProposalAutoApplied:
			rec.Status, rec.Auto = ProposalApplied, true
		default:
			rec.Status = ProposalRejected
		}
		return rec, true
	case *MemoryRolledBack:
		if rec == nil || rec.Status != ProposalApplied {
			return rec, false
		}
		rec.Status, rec.RolledBack, rec.RollbackChannel, rec.LastSeq = ProposalRolledBack, &t, e.Channel, env.Seq
		return rec, true
	}
	return rec, false
}

// ProposalOf is the proposal id a memory event is about, "" for any other.
func ProposalOf(e Event) string {
	switch e := e.(type) {
	case *MemoryProposed:
		return e.ProposalID
	case *MemoryProposalDecided:
		return e.ProposalID
	case *MemoryRolledBack:
		return e.ProposalID
	}
	return ""
}
