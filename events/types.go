package events

import (
	"cmp"
	"encoding/json"
	"time"
)

// Event types. The string is stored in every envelope and is part of the
// subject; it never changes once shipped.
const (
	TypeConversationOpened     = "conversation_opened"
	TypeConversationClosed     = "conversation_closed"
	TypeMessageReceived        = "message_received"
	TypeRunStarted             = "run_started"
	TypeModelCalled            = "model_called"
	TypeToolCalled             = "tool_called"
	TypeToolCompleted          = "tool_completed"
	TypeRunFinished            = "run_finished"
	TypeSteerReceived          = "steer_received"
	TypeSteersApplied          = "steers_applied"
	TypeGuardReminded          = "guard_reminded"
	TypeApprovalRequested      = "approval_requested"
	TypeApprovalDecided        = "approval_decided"
	TypeRouteFallback          = "route_fallback"
	TypeEscalated              = "escalated"
	TypeJobScheduled           = "job_scheduled"
	TypeJobFired               = "job_fired"
	TypeJobCompleted           = "job_completed"
	TypeJobCancelled           = "job_cancelled"
	TypeJobRetryScheduled      = "job_retry_scheduled"
	TypeTelegramOffset         = "telegram_offset_advanced"
	TypeMCPServerRestarted     = "mcp_server_restarted"
	TypeStreamReplicasRaised   = "stream_replicas_raised"
	TypeConversationSummarized = "conversation_summarized"
	TypeHookRan                = "hook_ran"
	TypeMemoryProposed         = "memory_proposed"
	TypeMemoryProposalDecided  = "memory_proposal_decided"
	TypeMemoryRolledBack       = "memory_rolled_back"
	TypeRunResumed             = "run_resumed"
	TypeNestedCall             = "nested_call"
)

func init() {
	register[ConversationOpened]()
	register[ConversationClosed]()
	register[MessageReceived]()
	register[RunStarted]()
	register[ModelCalled]()
	register[ToolCalled]()
	register[ToolCompleted]()
	register[NestedCall]()
	register[RunFinished]()
	register[SteerReceived]()
	register[SteersApplied]()
	register[GuardReminded]()
	register[ApprovalRequested]()
	register[ApprovalDecided]()
	register[RouteFallback]()
	register[Escalated]()
	register[JobScheduled]()
	register[JobFired]()
	register[JobCompleted]()
	register[JobCancelled]()
	register[JobRetryScheduled]()
	register[TelegramOffsetAdvanced]()
	register[MCPServerRestarted]()
	register[StreamReplicasRaised]()
	register[ConversationSummarized]()
	register[HookRan]()
	register[MemoryProposed]()
	register[MemoryProposalDecided]()
	register[MemoryRolledBack]()
	register[RunResumed]()
}

// ConversationOpened is the first event of a conversation.
type ConversationOpened struct {
	Agent   string `json:"agent"`
	Channel string `json:"channel"`         // "web", "telegram:<chat>", "api", "job:<id>", "delegate"
	Day     string `json:"day,omitempty"`   // YYYY-MM-DD in the owner's timezone, for per-day conversations
	Title   string `json:"title,omitempty"` // shown in lists
	// RootID and RootSource name the conversation a delegation chain started
	// from and its channel (empty for a root conversation).
	RootID     string `json:"root_id,omitempty"`
	RootSource string `json:"root_source,omitempty"`
	// ParentRunID is the run that delegated this conversation, if any;
	// ParentConversation and ParentCallID the conversation and the delegate
	// call it answers.
	ParentRunID        string `json:"parent_run_id,omitempty"`
	ParentConversation string `json:"parent_conversation,omitempty"`
	ParentCallID       string `json:"parent_call_id,omitempty"`
	// CostCapUSD, when set, is this conversation's budget instead of the
	// agent's cap (a delegated child gets what its parent had left).
	CostCapUSD         *float64 `json:"cost_cap_usd,omitempty"`
	Autonomous         bool     `json:"autonomous,omitempty"`
	ApprovalTTLSeconds int      `json:"approval_ttl_seconds,omitempty"`
	// Team and Member seat a teammate's conversation: the team (its
	// lead's conversation) and the member's name.
	Team   string `json:"team,omitempty"`
	Member string `json:"member,omitempty"`
	// ForkedFrom is set on a fork (conversation_forked follows).
	ForkedFrom *ForkOrigin `json:"forked_from,omitempty"`
}

func (*ConversationOpened) EventType() string { return TypeConversationOpened }
func (*ConversationOpened) EventVersion() int { return 1 }

// ConversationClosed ends a conversation (day change, owner request).
type ConversationClosed struct {
	Reason  string `json:"reason"`
	Summary string `json:"summary,omitempty"`
}

func (*ConversationClosed) EventType() string { return TypeConversationClosed }
func (*ConversationClosed) EventVersion() int { return 1 }

// MessageReceived is an owner's message accepted by Inbound (or a job's
// prompt). It is stored before the sender is acknowledged.
type MessageReceived struct {
	Channel     string   `json:"channel"`
	From        string   `json:"from,omitempty"`
	Text        string   `json:"text"`
	Attachments []string `json:"attachments,omitempty"` // workspace-relative paths
	// ExternalID names the message in its channel ("telegram:<update_id>"),
	// so a redelivery after a crash is recognised and not answered twice.
	ExternalID string `json:"external_id,omitempty"`
	// Command names the kit command the text invoked ("/tongket args"),
	// and Prompt is what the model reads instead of Text: the command's
	// file with $ARGUMENTS filled in, as it was when the message arrived.
	Command string `json:"command,omitempty"`
	Prompt  string `json:"prompt,omitempty"`
	// TurnNotes is what changed in the agent's memory since this
	// conversation was last told (R-CTX-2); the model reads it framed,
	// right before the message, at every later call. Never rewritten.
	TurnNotes *TurnNotes `json:"turn_notes,omitempty"`
	// CanvasNotes is what changed in the conversation's canvases since it
	// last saw them (R-CTX-3); the model reads it only during the turn
	// this message opens, a fixed line afterwards.
	CanvasNotes *CanvasNotes `json:"canvas_notes,omitempty"`
	// Team is mail the team runtime delivered (channel "team"): the model
	// reads it framed as team events, never as the owner's words.
	Team *TeamDelivery `json:"team,omitempty"`
}

// TurnNotes travel with a turn-opening message (seed 000 §6).
type TurnNotes struct {
	// Text is the notes block as the model reads it, without the frame.
	Text string `json:"text"`
	// Told is what the conversation has been told of each item after this
	// message: the items changed here, each with its whole length and
	// digest, so the next message can tell only what changed since.
	Told []NoteTold `json:"told"`
}

// NoteTold is how much of one memory item a conversation has been told.
type NoteTold struct {
	Key    string `json:"key"`    // "summary:<channel>", "memory/2026-11-30.md"
	Len    int    `json:"len"`    // bytes of the item as told
	Digest string `json:"digest"` // sha256 hex of those bytes
}

func (*MessageReceived) EventType() string { return TypeMessageReceived }
func (*MessageReceived) EventVersion() int { return 1 }

// RunStarted opens a run: one turn of one agent on a conversation.
type RunStarted struct {
	RunID string `json:"run_id"`
	Agent string `json:"agent"`
	// Trigger is what started the run: "message" (a message on an idle
	// conversation, a job's prompt included), "queue" (messages that arrived
	// while a run was open), "delegate" (a delegated child's first run),
	// "team" (a team delivery), "task_notification" (a background
	// command's end) or "fork" (a fork's run, opened at the step it was
	// copied from: conversation_forked follows). A
	// restart that finds a run open resumes it: no new run_started.
	Trigger     string `json:"trigger"`
	ParentRunID string `json:"parent_run_id,omitempty"`
}

func (*RunStarted) EventType() string { return TypeRunStarted }
func (*RunStarted) EventVersion() int { return 1 }

// ToolCallRequest is one tool call the model asked for.
type ToolCallRequest struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Why a model call was made (ModelCalled.Purpose; empty means PurposeTurn).
// Only a turn's calls (turn, escalation) are replies in the conversation; the
// others are the harness's own questions, recorded for their usage and cost.
const (
	PurposeTurn        = "turn"        // a step of an agent's turn
	PurposeEscalation  = "escalation"  // a step of a turn on the escalation route
	PurposeScript      = "script"      // a script's llm.* call
	PurposeConsolidate = "consolidate" // memory consolidation (R-MEM-2)
	PurposeSummary     = "summary"     // a conversation's summary
	PurposeCompaction  = "compaction"  // summarising history to fit the context
	PurposeVision      = "vision"      // image_read describing an image
	PurposeEmbed       = "embed"       // recall embedding documents and queries
)

// ModelCalled records one model call: which route answered, what it said,
// what it cost, and why it was made. CostUSD is nil when the cost is unknown
// (never zero by default). A turn's call carries its run and step; the
// harness's own calls (Purpose other than turn and escalation) may have
// neither.
type ModelCalled struct {
	RunID        string            `json:"run_id,omitempty"`
	Step         int               `json:"step,omitempty"`
	Purpose      string            `json:"purpose,omitempty"`
	Route        string            `json:"route"`
	Model        string            `json:"model"`
	Text         string            `json:"text,omitempty"`
	ToolCalls    []ToolCallRequest `json:"tool_calls,omitempty"`
	InputTokens  int               `json:"input_tokens"`
	OutputTokens int               `json:"output_tokens"`
	CostUSD      *float64          `json:"cost_usd"`
	LatencyMS    int64             `json:"latency_ms"`
	Error        string            `json:"error,omitempty"`
	// Stopped: the owner stopped the run while this call streamed; the
	// request was cancelled and Text is what it had written (kept, shown
	// marked "stopped").
	Stopped bool `json:"stopped,omitempty"`
	// EstimatedTokens is the harness's estimate of the request
	// (llm.EstimateTokens), logged beside InputTokens, the provider's
	// count: their ratio calibrates the next estimates on the route.
	EstimatedTokens int `json:"estimated_input_tokens,omitempty"`
	// CachedInputTokens of InputTokens were read from the provider's
	// prompt cache, CacheWriteTokens written to it; CacheSavedUSD is what
	// the cache saved against the full input price (negative when the
	// writes cost more than the reads saved).
	CachedInputTokens int      `json:"cached_input_tokens,omitempty"`
	CacheWriteTokens  int      `json:"cache_write_tokens,omitempty"`
	CacheSavedUSD     *float64 `json:"cache_saved_usd,omitempty"`
	// System is the system prompt the step's request sent, recorded on a
	// turn's step when it differs from the last one this pass recorded
	// (its first step always): the latest System at or before a step's
	// model_called is what that step sent. A fork pins it (R-X-2).
	System string `json:"system,omitempty"`
}

func (*ModelCalled) EventType() string { return TypeModelCalled }
func (*ModelCalled) EventVersion() int { return 1 }

// InTurn reports whether the call is a step of a turn, so its reply is part
// of the conversation (history, runs, channels); otherwise it counts for
// usage only.
func (e *ModelCalled) InTurn() bool {
	return e.Purpose == "" || e.Purpose == PurposeTurn || e.Purpose == PurposeEscalation
}

// PurposeOf is the call's purpose with the empty default spelled out.
func (e *ModelCalled) PurposeOf() string { return cmp.Or(e.Purpose, PurposeTurn) }

// ToolCalled records that the harness started running a tool call. A
// ToolCalled without a ToolCompleted after a crash means the call may or may
// not have run.
type ToolCalled struct {
	RunID     string          `json:"run_id"`
	Step      int             `json:"step"`
	CallID    string          `json:"call_id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

func (*ToolCalled) EventType() string { return TypeToolCalled }
func (*ToolCalled) EventVersion() int { return 1 }

// RefusedByCheck is ToolCompleted.RefusedBy for a call its tool's Check
// refused.
const RefusedByCheck = "check"

// ToolCompleted is the result the model will see for one tool call.
type ToolCompleted struct {
	RunID      string `json:"run_id"`
	Step       int    `json:"step"`
	CallID     string `json:"call_id"`
	Tool       string `json:"tool"`
	Output     string `json:"output"`
	IsError    bool   `json:"is_error,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	SpillPath  string `json:"spill_path,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	// Why a result was produced by the harness instead of the tool:
	// "denied", "expired", "max_steps", "loop", "escalated", "interrupted",
	// "blocked" (deny pattern / hook). Empty when the tool ran.
	Outcome string `json:"outcome,omitempty"`
	// RefusedBy says which part of the harness refused a blocked call
	// before the gate: "check" (RefusedByCheck) when the tool's own Check
	// refused its arguments, read by a replay, which answers each call's
	// Check as it was recorded (its Check may read live state, such as a
	// browser page's outline). Empty otherwise.
	RefusedBy string `json:"refused_by,omitempty"`
	// Delegate describes the child run a delegate call ran.
	Delegate *DelegateResult `json:"delegate,omitempty"`
	// Parts are what the call produced beside its text (an image, a file
	// reference), as references: an image's bytes are kept in the spill
	// folder, never in the log. Meta is the tool's structured detail for
	// the harness and the UI. Both are absent for text-only results.
	Parts []ToolPart     `json:"parts,omitempty"`
	Meta  map[string]any `json:"meta,omitempty"`
	// Canvas is the canvas a canvas tool read or wrote.
	Canvas *CanvasRef `json:"canvas,omitempty"`
}

// ToolPart is one part of a tool result beside its text.
type ToolPart struct {
	Kind string `json:"kind"`           // "text", "image" or "file"
	Text string `json:"text,omitempty"` // a text part
	MIME string `json:"mime,omitempty"`
	// Path is where the part is: an image under spill/<conversation>/
	// (relative to the home), a file relative to the workspace.
	Path  string `json:"path,omitempty"`
	Bytes int    `json:"bytes,omitempty"` // an image's size
}

// DelegateResult is the child side of a delegate call (R-DEL).
type DelegateResult struct {
	Agent        string   `json:"agent"`
	Conversation string   `json:"conversation"`
	RunID        string   `json:"run_id,omitempty"`
	Status       string   `json:"status"` // the child run's: done, halted, failed
	CostUSD      *float64 `json:"cost_usd"`
	// UnknownCostCalls counts the child's model calls whose cost was not
	// reported: CostUSD is then a lower bound, never silently complete.
	UnknownCostCalls int `json:"unknown_cost_calls,omitempty"`
}

func (*ToolCompleted) EventType() string { return TypeToolCompleted }
func (*ToolCompleted) EventVersion() int { return 1 }

// NestedCall is one call a tool_script made (R-SCR), recorded as it
// finishes, between the script's tool_called and tool_completed: a tool
// call or a model question (llm.*, whose cost the model_called of purpose
// script carries). N numbers the script's calls in written order.
type NestedCall struct {
	RunID     string          `json:"run_id"`
	Step      int             `json:"step"`
	CallID    string          `json:"call_id"` // the tool_script call
	N         int             `json:"n"`
	Kind      string          `json:"kind"` // tool or llm
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// Outcome "stopped": the owner's stop cut the call while it ran.
	Outcome    string   `json:"outcome,omitempty"`
	Chars      int      `json:"chars"` // what the script received
	DurationMS int64    `json:"duration_ms"`
	CostUSD    *float64 `json:"cost_usd,omitempty"`
	// Canvas is the canvas a canvas tool of the script read or wrote,
	// folded as a direct call's (ToolCompleted.Canvas).
	Canvas *CanvasRef `json:"canvas,omitempty"`
	// Delegate is the child a tools.delegate ran; CostUSD is what it spent.
	Delegate *DelegateResult `json:"delegate,omitempty"`
	// Untrusted: what the script received held fenced outside content
	// (R-SEC-1), so the run has read untrusted content (R-X-7).
	Untrusted bool `json:"untrusted,omitempty"`
	// Provenance is what a memory, fact or wiki write of the script
	// recorded (R-X-7), as a direct call's result meta "provenance".
	Provenance map[string]any `json:"provenance,omitempty"`
}

func (*NestedCall) EventType() string { return TypeNestedCall }
func (*NestedCall) EventVersion() int { return 1 }

// Run statuses.
const (
	RunDone   = "done"
	RunHalted = "halted"
	RunFailed = "failed"
)

// RunFinished closes a run.
type RunFinished struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`           // RunDone, RunHalted, RunFailed, RunStopped
	Reason string `json:"reason,omitempty"` // for halted: max_steps, loop, cost_cap, ...; stopped: stopped_by_owner
	Error  string `json:"error,omitempty"`
	// By is who stopped a stopped run (web, api, telegram, cli).
	By string `json:"by,omitempty"`
}

func (*RunFinished) EventType() string { return TypeRunFinished }
func (*RunFinished) EventVersion() int { return 1 }

// RunResumed says the worker took up an open run again after the server
// restarted in its middle (a crash or a kill: the run had not paused on an
// approval). A run whose work was cut this way twice is closed as
// interrupted rather than resumed again (R-X-4).
type RunResumed struct {
	RunID string `json:"run_id"`
	Step  int    `json:"step"` // the run's last model-call step then
}

func (*RunResumed) EventType() string { return TypeRunResumed }
func (*RunResumed) EventVersion() int { return 1 }

// SteerReceived is a "/steer <text>" message for the running turn; the turn
// takes it in at its next tool boundary (SteersApplied).
type SteerReceived struct {
	Channel string `json:"channel"`
	Text    string `json:"text"`
	// Command and Prompt as on MessageReceived: a kit command sent while a
	// turn runs is taken in at its next tool boundary (R-IN-3), the model
	// reading the command's prompt.
	Command string `json:"command,omitempty"`
	Prompt  string `json:"prompt,omitempty"`
	// ExternalID as on MessageReceived (a redelivery is not stored twice).
	ExternalID string `json:"external_id,omitempty"`
	// TurnNotes as on MessageReceived: a steer opens the next step.
	TurnNotes   *TurnNotes   `json:"turn_notes,omitempty"`
	CanvasNotes *CanvasNotes `json:"canvas_notes,omitempty"`
	// Team: mail the team runtime delivered into a teammate's running
	// turn, read at its next step boundary as team events, never as the
	// owner's words (R-TEAM).
	Team *TeamDelivery `json:"team,omitempty"`
}

func (*SteerReceived) EventType() string { return TypeSteerReceived }
func (*SteerReceived) EventVersion() int { return 1 }

// SteersApplied records the tool boundary at which pending steers (by the
// ids of their SteerReceived events) entered the model's history as user
// messages.
type SteersApplied struct {
	RunID    string   `json:"run_id"`
	Step     int      `json:"step"`
	SteerIDs []string `json:"steer_ids"`
	// Withheld: the owner's UserPromptSubmit hook blocked these steers, so
	// they enter the history as a withheld line, never as their words.
	Withheld bool `json:"withheld,omitempty"`
}

func (*SteersApplied) EventType() string { return TypeSteersApplied }
func (*SteersApplied) EventVersion() int { return 1 }

// GuardReminded is the loop guard's reminder, shown to the model as a
// user-role message naming only the tool and the count.
type GuardReminded struct {
	RunID string `json:"run_id"`
	Step  int    `json:"step"`
	Tool  string `json:"tool"`
	Count int    `json:"count"`
	Text  string `json:"text"`
}

func (*GuardReminded) EventType() string { return TypeGuardReminded }
func (*GuardReminded) EventVersion() int { return 1 }

// ApprovalRequested pauses a run on a gated tool call. Nothing has run.
type ApprovalRequested struct {
	ApprovalID string          `json:"approval_id"`
	RunID      string          `json:"run_id"`
	Step       int             `json:"step"`
	CallID     string          `json:"call_id"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments"`
	Reason     string          `json:"reason,omitempty"` // an ask_when reason, shown on the card
	ExpiresAt  time.Time       `json:"expires_at"`
}

func (*ApprovalRequested) EventType() string { return TypeApprovalRequested }
func (*ApprovalRequested) EventVersion() int { return 1 }

// Approval decisions.
const (
	DecisionApproved = "approved"
	DecisionDenied   = "denied"
	DecisionExpired  = "expired"
)

// ApprovalDecided answers an approval. Expired is decided by the sweep and
// handled as a deny.
type ApprovalDecided struct {
	ApprovalID string `json:"approval_id"`
	Decision   string `json:"decision"`
	Always     bool   `json:"always,omitempty"` // approved, and the tool joins auto_approve
	Channel    string `json:"channel,omitempty"`
}

func (*ApprovalDecided) EventType() string { return TypeApprovalDecided }
func (*ApprovalDecided) EventVersion() int { return 1 }

// RouteFallback: a model call moves from one route to another. Reason
// "" (or FallbackError): it failed on From; FallbackVision: its request
// carries an image and From cannot see, so this one call goes to the
// agent's first vision route (Error empty), and the next call without an
// image goes back.
type RouteFallback struct {
	RunID  string `json:"run_id"`
	Step   int    `json:"step"`
	From   string `json:"from"`
	To     string `json:"to"`
	Error  string `json:"error"`
	Reason string `json:"reason,omitempty"`
	// Text is what the failed reply had written before it broke off (the
	// owner saw it stream): kept, marked Interrupted, never re-asked
	// silently (R-LOOP-7).
	Text        string `json:"text,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
}

// Why a route_fallback moved (RouteFallback.Reason).
const (
	FallbackError  = "error"
	FallbackVision = "vision"
)

// Vision: the call moved to a route that can see, not away from a failure.
func (e *RouteFallback) Vision() bool { return e.Reason == FallbackVision }

func (*RouteFallback) EventType() string { return TypeRouteFallback }
func (*RouteFallback) EventVersion() int { return 1 }

// Escalated: the turn moved to the agent's escalation_route, because the
// loop guard would have halted it ("loop") or every route failed before any
// text was shown ("error").
type Escalated struct {
	RunID  string `json:"run_id"`
	Step   int    `json:"step"`
	Reason string `json:"reason"`
	Route  string `json:"route"`
	Error  string `json:"error,omitempty"`
}

func (*Escalated) EventType() string { return TypeEscalated }
func (*Escalated) EventVersion() int { return 1 }

// Job origins.
const (
	OriginProfile = "profile" // schedules: in agent.yaml
	OriginChat    = "chat"    // proposed by schedule_create, approved by the owner
)

// JobScheduled records a job that does not come from agent.yaml: one an
// agent proposed with schedule_create and the owner approved word for word.
// Stored on crew.job.<job>.
type JobScheduled struct {
	Agent              string `json:"agent"`
	Name               string `json:"name"`
	Cron               string `json:"cron,omitempty"` // empty: a one-shot job, due at At
	At                 string `json:"at,omitempty"`   // RFC 3339, one-shot jobs
	Prompt             string `json:"prompt,omitempty"`
	Command            string `json:"command,omitempty"`
	Script             string `json:"script,omitempty"`
	ThenPrompt         string `json:"then_prompt,omitempty"`
	ApprovalTTLSeconds int    `json:"approval_ttl_seconds,omitempty"`
	Origin             string `json:"origin"`
	// SourceConversation is where schedule_create was approved.
	SourceConversation string `json:"source_conversation,omitempty"`
}

func (*JobScheduled) EventType() string { return TypeJobScheduled }
func (*JobScheduled) EventVersion() int { return 1 }

// JobFired: a job came due (or was run by hand) and its turn was queued on
// the job's own conversation. Stored before the turn's message, so a crash
// between them re-delivers the job (at-least-once).
type JobFired struct {
	Agent        string    `json:"agent"`
	Due          time.Time `json:"due"`
	Conversation string    `json:"conversation,omitempty"` // empty for a script job that opened no turn
	Manual       bool      `json:"manual,omitempty"`
	Origin       string    `json:"origin"`
	// Attempt numbers a one-shot's retry (2, 3, 4: after a
	// job_retry_scheduled); 0 is the first firing.
	Attempt int `json:"attempt,omitempty"`
}

func (*JobFired) EventType() string { return TypeJobFired }
func (*JobFired) EventVersion() int { return 1 }

// Job results.
const (
	JobOK      = "ok"
	JobFailed  = "failed"
	JobSkipped = "skipped" // a script job that printed nothing, or had no then_prompt
)

// JobCompleted closes one firing of a job.
type JobCompleted struct {
	Status  string    `json:"status"`
	Output  string    `json:"output,omitempty"` // a script's output, cut
	Error   string    `json:"error,omitempty"`
	NextRun time.Time `json:"next_run,omitzero"`
}

func (*JobCompleted) EventType() string { return TypeJobCompleted }
func (*JobCompleted) EventVersion() int { return 1 }

// JobRetryScheduled: a one-shot job's firing failed and the job fires
// again at RetryAt, as attempt Attempt (R-JOB, at least once). Stored in
// one batch with the failed firing's JobCompleted, so the retry survives a
// restart; after the last attempt fails no retry is scheduled.
type JobRetryScheduled struct {
	Attempt int       `json:"attempt"` // the attempt that will run: 2, 3, 4
	RetryAt time.Time `json:"retry_at"`
	Error   string    `json:"error,omitempty"` // the failure retried
}

func (*JobRetryScheduled) EventType() string { return TypeJobRetryScheduled }
func (*JobRetryScheduled) EventVersion() int { return 1 }

// JobCancelled stops a chat-origin job (profile jobs change in agent.yaml).
type JobCancelled struct {
	Reason string `json:"reason"`
}

func (*JobCancelled) EventType() string { return TypeJobCancelled }
func (*JobCancelled) EventVersion() int { return 1 }

// TelegramOffsetAdvanced records the next getUpdates offset of a bot,
// appended only after the updates before it are stored as messages. Stored
// on crew.tg.<bot>.
type TelegramOffsetAdvanced struct {
	Offset int64 `json:"offset"`
}

func (*TelegramOffsetAdvanced) EventType() string { return TypeTelegramOffset }
func (*TelegramOffsetAdvanced) EventVersion() int { return 1 }

// MCPServerRestarted: a stdio MCP server's process ended and the crew
// started it again (after a capped backoff). Stored on crew.mcp.<server>.
type MCPServerRestarted struct {
	Server   string `json:"server"`
	Restarts int    `json:"restarts"` // since it last stayed up a minute
	Reason   string `json:"reason"`   // how the previous process ended, redacted
}

func (*MCPServerRestarted) EventType() string { return TypeMCPServerRestarted }
func (*MCPServerRestarted) EventVersion() int { return 1 }

// StreamReplicasRaised: the CREW stream was found with fewer replicas
// than the cluster can place (made while it had fewer servers, or by an
// older build) and was raised (R-ES-8). Stored once per raise, by the
// process that raised it, on crew.cluster.
type StreamReplicasRaised struct {
	From    int `json:"from"`
	To      int `json:"to"`
	Servers int `json:"servers"` // the cluster's servers when it was raised
}

func (*StreamReplicasRaised) EventType() string { return TypeStreamReplicasRaised }
func (*StreamReplicasRaised) EventVersion() int { return 1 }

// ConversationSummarized stores a summary of the conversation so far, made
// when it closes at day end or on demand. The next conversation on the same
// channel is told it as "Previous conversation" (R-CTX-2). Every transcript
// line it was made from starts with the date-time in the owner's timezone,
// and the summary uses absolute dates.
type ConversationSummarized struct {
	Summary    string    `json:"summary"`
	LastAt     time.Time `json:"last_at"`     // the last message summarized
	ThroughSeq uint64    `json:"through_seq"` // the last event summarized
	Route      string    `json:"route,omitempty"`
	CostUSD    *float64  `json:"cost_usd,omitempty"`
}

func (*ConversationSummarized) EventType() string { return TypeConversationSummarized }
func (*ConversationSummarized) EventVersion() int { return 1 }

// ChannelSummary is the latest conversation summary of an agent on a
// channel: what the next conversation there is told as "Previous
// conversation" (R-CTX-2). The summaries projection stores it and the
// turn notes read it.
type ChannelSummary struct {
	Conversation string    `json:"conversation"`
	Agent        string    `json:"agent"`
	Channel      string    `json:"channel"`
	Summary      string    `json:"summary"`
	LastAt       time.Time `json:"last_at"`
	ThroughSeq   uint64    `json:"through_seq"`
}

// HookRan records one run of an owner's hook command (R-LOOP-8).
type HookRan struct {
	RunID      string `json:"run_id"`
	Step       int    `json:"step,omitempty"`
	Hook       string `json:"hook"` // UserPromptSubmit, PreToolUse, PostToolUse, Stop
	Command    string `json:"command"`
	CallID     string `json:"call_id,omitempty"`
	Tool       string `json:"tool,omitempty"`
	ExitCode   int    `json:"exit_code"`
	Output     string `json:"output,omitempty"` // stdout and stderr, cut
	Blocked    bool   `json:"blocked,omitempty"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

func (*HookRan) EventType() string { return TypeHookRan }
func (*HookRan) EventVersion() int { return 1 }

// Memory proposal kinds, decided by a line diff in code (R-MEM-2).
const (
	ProposalAddOnly     = "add_only"
	ProposalDateOnly    = "date_only"
	ProposalRemoval     = "removal"
	ProposalChange      = "change"
	ProposalUnknownDate = "unknown_date"
	ProposalUnchanged   = "unchanged"
)

// MemoryProposed files a rewrite of an agent's MEMORY.md, made by the
// memory_consolidate operation from the last 7 days of notes. Stored on
// the agent's scope.
type MemoryProposed struct {
	ProposalID string   `json:"proposal_id"`
	Agent      string   `json:"agent"`
	Old        string   `json:"old"` // MEMORY.md when proposed: kept for rollback
	New        string   `json:"new"`
	Days       []string `json:"days"` // the notes read, YYYY-MM-DD
	Kind       string   `json:"kind"`
	Reason     string   `json:"reason,omitempty"` // why it waits for a human
	Route      string   `json:"route,omitempty"`
	CostUSD    *float64 `json:"cost_usd,omitempty"`
	Trigger    string   `json:"trigger"` // cli, api, job; tool for a persona file
	// File is what the proposal rewrites: "" is MEMORY.md (consolidation);
	// AGENTS.md or SOUL.md when a tool wrote or edited one, which is never
	// applied without the owner (R-X-7). Tool, Run, CallID and
	// Conversation name that call (Run is not RunID: the event is the
	// agent's, not the run's); Untrusted is the untrusted content its run
	// had read before it, if any.
	File         string `json:"file,omitempty"`
	Tool         string `json:"tool,omitempty"`
	Run          string `json:"run_id,omitempty"`
	CallID       string `json:"call_id,omitempty"`
	Conversation string `json:"conversation,omitempty"`
	Untrusted    string `json:"untrusted,omitempty"`
}

// Files a memory proposal rewrites besides MEMORY.md (MemoryProposed.File):
// the agent's persona, which only the owner changes.
const (
	PersonaAgents = "AGENTS.md"
	PersonaSoul   = "SOUL.md"
)

// TriggerTool is MemoryProposed.Trigger for a persona file a tool wrote.
const TriggerTool = "tool"

func (*MemoryProposed) EventType() string { return TypeMemoryProposed }
func (*MemoryProposed) EventVersion() int { return 1 }

// Proposal decisions.
const (
	ProposalApproved    = "approved"
	ProposalRejected    = "rejected"
	ProposalAutoApplied = "auto_applied"
)

// MemoryProposalDecided approves (MEMORY.md is then written), rejects or
// auto-applies a proposal. Recorded before the file is written.
type MemoryProposalDecided struct {
	ProposalID string `json:"proposal_id"`
	Decision   string `json:"decision"`
	Channel    string `json:"channel,omitempty"`
}

func (*MemoryProposalDecided) EventType() string { return TypeMemoryProposalDecided }
func (*MemoryProposalDecided) EventVersion() int { return 1 }

// MemoryRolledBack puts back the MEMORY.md an applied proposal replaced.
type MemoryRolledBack struct {
	ProposalID string `json:"proposal_id"`
	Channel    string `json:"channel,omitempty"`
}

func (*MemoryRolledBack) EventType() string { return TypeMemoryRolledBack }
func (*MemoryRolledBack) EventVersion() int { return 1 }
