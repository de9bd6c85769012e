package view

import "github.com/my-agent-crew/crew/events"

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

// Triggers: what asked for a consolidation (consolidate's).
const (
	TriggerCLI = "cli"
	TriggerAPI = "api"
	TriggerJob = "job"
)
