package view

import (
	"fmt"
	"io"

	"github.com/my-agent-crew/crew/events"
)

// Proposal is one proposed rewrite of an agent's MEMORY.md (R-MEM-2) with
// what became of it, folded from the agent's scope (the memory projection
// stores the same record, which the web pages read), with its line diff
// and how many lines it adds and removes (consolidate.Proposal).
type Proposal struct {
	events.ProposalRecord
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
	Diff    []Line `json:"diff,omitempty"`
}

// Write prints what was filed, what the owner can do about it and the
// diff, as crew memory consolidate shows it.
func (p Proposal) Write(w io.Writer) {
	fmt.Fprintf(w, "proposal %s for %s: %s (+%d −%d)\n", p.ID, p.Agent, p.Kind, p.Added, p.Removed)
	if p.Reason != "" {
		fmt.Fprintf(w, "  %s\n", p.Reason)
	}
	if p.Status == events.ProposalApplied {
		fmt.Fprintf(w, "applied to MEMORY.md; to undo: POST /api/memory/proposals/%s/rollback, or Roll back on /memory\n", p.ID)
	} else {
		fmt.Fprintf(w, "waits for you: Approve or Reject on /memory, or POST /api/memory/proposals/%s {\"decision\":\"approve\"}\n", p.ID)
	}
	fmt.Fprintln(w)
	for _, l := range p.Diff {
		fmt.Fprintf(w, "%c %s\n", l.Op, l.Text)
	}
}

// Triggers: what asked for a consolidation (consolidate's).
const (
	TriggerCLI = "cli"
	TriggerAPI = "api"
	TriggerJob = "job"
)
