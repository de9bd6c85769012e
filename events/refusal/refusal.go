// Package refusal holds the sentinel errors with which the loop and its
// services (consolidate, summarize, team) refuse a request: an unknown
// id, a decision already taken, nothing to stop. They live here, below
// both, so that a door maps them to its own answer (the web gateway's
// HTTP status and code, the CLI's exit code) without importing the loop;
// the loop's packages keep their names for them (loop.ErrNothingRunning
// is refusal.ErrNothingRunning), so errors.Is holds either way.
package refusal

import "errors"

// Approvals and questions (loop).
var (
	ErrUnknownApproval = errors.New("no such approval")
	// ErrApprovalDecided is loop.ErrAlreadyDecided.
	ErrApprovalDecided = errors.New("approval already decided")
	ErrUnknownQuestion = errors.New("no such question")
	ErrAlreadyAnswered = errors.New("question already answered")
	ErrQuestionExpired = errors.New("question expired")
	// ErrQuestionWithdrawn: the run was stopped while the question waited.
	ErrQuestionWithdrawn = errors.New("question withdrawn: the run was stopped")
	ErrBadAnswer         = errors.New("bad answer")
)

// Stops, the queue and background tasks (loop).
var (
	// ErrNothingRunning: a stop of a conversation with no open run and no
	// message waiting (HTTP 409 nothing_running).
	ErrNothingRunning = errors.New("nothing running")
	// ErrBadScope: a stop's scope is none of run, queue, all.
	ErrBadScope = errors.New("bad stop scope")
	// ErrNoWaiting: no waiting message at that place in the queue (404).
	ErrNoWaiting = errors.New("no such waiting message")
	// ErrUnknownTask: no background task of that id (in that conversation).
	ErrUnknownTask = errors.New("no such background task")
	// ErrTaskEnded: the task has ended already; there is nothing to stop.
	ErrTaskEnded = errors.New("background task already finished")
)

// Forks (loop).
var (
	ErrForkRun  = errors.New("no such run")
	ErrForkStep = errors.New("no such step")
	// ErrForkRefused: the run cannot be forked (a delegated child's or a
	// teammate's conversation, whose place in its parent or team a copy
	// cannot take).
	ErrForkRefused = errors.New("run cannot be forked")
	// ErrForkRoute: the route is not one this home can call.
	ErrForkRoute = errors.New("unknown route")
)

// Memory consolidation (loop/consolidate).
var (
	// ErrConsolidateUnknownAgent means no loaded agent has the id.
	ErrConsolidateUnknownAgent = errors.New("consolidate: unknown agent")
	// ErrUnknownProposal means no proposal has the id.
	ErrUnknownProposal = errors.New("consolidate: unknown proposal")
	// ErrNothingToConsolidate means the agent wrote no notes in the last 7
	// days; no model was called.
	ErrNothingToConsolidate = errors.New("consolidate: nothing to consolidate")
	// ErrProposalDecided means the proposal was approved, rejected or
	// auto-applied before.
	ErrProposalDecided = errors.New("consolidate: proposal already decided")
	// ErrNotApplied means a rollback of a proposal that is not applied
	// (pending, rejected or rolled back already).
	ErrNotApplied = errors.New("consolidate: proposal not applied")
	// ErrMemoryChanged means the file (MEMORY.md, or AGENTS.md or SOUL.md
	// for a persona proposal) is not the text the proposal expects: it
	// changed since the proposal was made (approve) or applied (rollback).
	ErrMemoryChanged = errors.New("consolidate: refused")
	// ErrConsolidateModel means every route of the agent failed.
	ErrConsolidateModel = errors.New("consolidate: every model route failed")
)

// A conversation's writer (loop.Convs).
var (
	// ErrUnknownConversation means the log holds no conversation with the
	// id (no agent took it up): nothing is written to it.
	ErrUnknownConversation = errors.New("no such conversation")
)

// Summaries and closing (loop/summarize).
var (
	// ErrSummarizeUnknownConversation means the log holds no conversation
	// with the id.
	ErrSummarizeUnknownConversation = errors.New("summarize: no such conversation")
	// ErrNothingToSummarize means the conversation has no message since its
	// last summary.
	ErrNothingToSummarize = errors.New("nothing to summarize: no message since the last summary")
	// ErrNotClosable means the conversation cannot be closed now: it is
	// closed already, a run is open, or messages wait for an answer.
	ErrNotClosable = errors.New("cannot close")
)

// A team's worktree removal (loop/team).
var (
	ErrNoWorktree        = errors.New("no such worktree")
	ErrWorktreeInUse     = errors.New("worktree in use")
	ErrWorktreeDirty     = errors.New("worktree has changes")
	ErrAmbiguousWorktree = errors.New("worktree name is on several teams")
)
