package consolidate

import "github.com/my-agent-crew/crew/events/refusal"

// The package's errors are events/refusal's, so a door maps them
// without importing consolidate.
var (
	// ErrUnknownAgent means no loaded agent has the id.
	ErrUnknownAgent = refusal.ErrConsolidateUnknownAgent
	// ErrUnknownProposal means no proposal has the id.
	ErrUnknownProposal = refusal.ErrUnknownProposal
	// ErrNothingToConsolidate means the agent wrote no notes in the last 7
	// days; no model was called.
	ErrNothingToConsolidate = refusal.ErrNothingToConsolidate
	// ErrAlreadyDecided means the proposal was approved, rejected or
	// auto-applied before.
	ErrAlreadyDecided = refusal.ErrProposalDecided
	// ErrNotApplied means a rollback of a proposal that is not applied
	// (pending, rejected or rolled back already).
	ErrNotApplied = refusal.ErrNotApplied
	// ErrMemoryChanged means the file (MEMORY.md, or AGENTS.md or SOUL.md
	// for a persona proposal) is not the text the proposal expects: it
	// changed since the proposal was made (approve) or applied (rollback).
	ErrMemoryChanged = refusal.ErrMemoryChanged
	// ErrModel means every route of the agent failed.
	ErrModel = refusal.ErrConsolidateModel
)
