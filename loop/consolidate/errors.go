package consolidate

import "errors"

var (
	// ErrUnknownAgent means no loaded agent has the id.
	ErrUnknownAgent = errors.New("consolidate: unknown agent")
	// ErrUnknownProposal means no proposal has the id.
	ErrUnknownProposal = errors.New("consolidate: unknown proposal")
	// ErrNothingToConsolidate means the agent wrote no notes in the last 7
	// days; no model was called.
	ErrNothingToConsolidate = errors.New("consolidate: nothing to consolidate")
	// ErrAlreadyDecided means the proposal was approved, rejected or
	// auto-applied before.
	ErrAlreadyDecided = errors.New("consolidate: proposal already decided")
	// ErrNotApplied means a rollback of a proposal that is not applied
	// (pending, rejected or rolled back already).
	ErrNotApplied = errors.New("consolidate: proposal not applied")
	// ErrMemoryChanged means the file (MEMORY.md, or AGENTS.md or SOUL.md
	// for a persona proposal) is not the text the proposal expects: it
	// changed since the proposal was made (approve) or applied (rollback).
	ErrMemoryChanged = errors.New("consolidate: refused")
	// ErrModel means every route of the agent failed.
	ErrModel = errors.New("consolidate: every model route failed")
)
