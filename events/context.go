package events

// Long conversations (R-LOOP-7): how a model call recovered from an
// error or a reply cut at its limit, and how the history the model reads
// was compacted. Both belong to a run and a step, on the conversation.
const (
	TypeModelRetried     = "model_retried"
	TypeContextCompacted = "context_compacted"
)

func init() {
	register[ModelRetried]()
	register[ContextCompacted]()
}

// Reasons of ModelRetried.
const (
	RetryRateLimited = "rate_limited"     // 429: wait (Retry-After or backoff), same route
	RetryUnavailable = "unavailable"      // 5xx, 529 overloaded, a broken stream: backoff, same route
	RetryLength      = "length"           // the reply stopped at max_tokens: once more with the limit doubled
	RetryContinue    = "continue"         // still cut: ask the model to continue where it stopped
	RetryTooLong     = "context_too_long" // the prompt did not fit: compact, then once more
)

// ModelRetried records one recovery inside a step, before the call is
// made again: which route, why, how long the harness waits. Text is what
// the failed or cut reply had written, which the owner may have seen
// stream: Interrupted marks a reply that failed after it was shown (kept
// here, never silently re-asked). A reply cut at the limit cost tokens:
// its usage is here, and the ledger counts it with the step's calls.
type ModelRetried struct {
	RunID        string   `json:"run_id"`
	Step         int      `json:"step"`
	Route        string   `json:"route"`
	Reason       string   `json:"reason"`
	Attempt      int      `json:"attempt"`
	WaitMS       int64    `json:"wait_ms,omitempty"`
	MaxTokens    int      `json:"max_tokens,omitempty"` // the next attempt's limit
	Error        string   `json:"error,omitempty"`
	Text         string   `json:"text,omitempty"`
	Interrupted  bool     `json:"interrupted,omitempty"`
	InputTokens  int      `json:"input_tokens,omitempty"`
	OutputTokens int      `json:"output_tokens,omitempty"`
	CostUSD      *float64 `json:"cost_usd,omitempty"`
}

func (*ModelRetried) EventType() string { return TypeModelRetried }
func (*ModelRetried) EventVersion() int { return 1 }
func (e *ModelRetried) runOf() string   { return e.RunID }

// Stages of ContextCompacted, in the order they run before a model call
// (seed 004: tool_result_budget → snip_compact → micro_compact →
// compact_history).
const (
	CompactBudget  = "budget"  // a result too large on its own: a preview and a pointer
	CompactSnip    = "snip"    // old middle history archived behind a note
	CompactMicro   = "micro"   // old, already read results replaced by a pointer
	CompactSummary = "summary" // the oldest history replaced by a summary the model wrote
	// CompactRunSummary: the open run's older steps replaced by a summary
	// the model wrote, read as the assistant's own note.
	CompactRunSummary = "run_summary"
	// CompactCut: what is kept whole (the newest results, the newest owner
	// message) did not fit alone: the largest cut with a marker.
	CompactCut = "cut"
)

// ContextCompacted changes what the model reads of the history, never the
// history itself: the log and the chat keep every message. Messages are
// counted in the conversation's history (State.Messages) from 0.
//
// budget and micro replace the results of Results' calls by their Text (a
// preview and/or a pointer: tool_output_read brings the whole back from
// SpillPath). snip and summary show messages [From, To) as one user
// message Text (a note, or the summary); run_summary shows them as one
// assistant message; a range may swallow earlier ones. cut does either: a
// result's Results, or an owner message [From, From+1) as Text.
type ContextCompacted struct {
	RunID   string            `json:"run_id"`
	Step    int               `json:"step"`
	Stage   string            `json:"stage"`
	Results []CompactedResult `json:"results,omitempty"`
	From    int               `json:"from,omitempty"`
	To      int               `json:"to,omitempty"`
	Text    string            `json:"text,omitempty"`
	// Route wrote the summary.
	Route string `json:"route,omitempty"`
	// CallID is the compact tool call that asked for it; empty: the
	// harness compacted on its own.
	CallID string `json:"call_id,omitempty"`
	// Tokens estimated before and after this stage, and the limit aimed at.
	Before int `json:"before_tokens"`
	After  int `json:"after_tokens"`
	Limit  int `json:"limit_tokens"`
}

// CompactedResult is one tool result shown shorter.
type CompactedResult struct {
	CallID    string `json:"call_id"`
	Chars     int    `json:"chars"` // of the result as it was shown before
	Text      string `json:"text"`  // what the model reads instead
	SpillPath string `json:"spill_path,omitempty"`
}

func (*ContextCompacted) EventType() string { return TypeContextCompacted }
func (*ContextCompacted) EventVersion() int { return 1 }
func (e *ContextCompacted) runOf() string   { return e.RunID }
