package ui

import "time"

// The view structs are everything the pages show. Handlers (gateways/web)
// build them from projections and conversation state; components render
// them and do no I/O.

// Shell is what every page shares: the agent roster, the conversation list,
// the CSRF token for forms and the status banner.
type Shell struct {
	Title         string
	Home          string
	Agents        []AgentRow
	Conversations []ConversationRow
	Active        string // the conversation shown, if any
	CSRF          string
	// Banner is a one-line warning: running on fake:echo, a route failing.
	Banner string
	// SignOut shows the sign-out form: the server asks for a token, so the
	// browser holds a session it can end.
	SignOut bool
	// Activity is the strip of the newest job events and Telegram
	// messages given up, newest first.
	Activity []ActivityRow
}

// ActivityRow is one line of the activity strip.
type ActivityRow struct {
	Type    string // job_fired, job_completed, job_failed, job_skipped, job_retry_scheduled, job_cancelled, telegram_send_failed
	Text    string
	At      string
	Job     string // "" for a Telegram line
	Problem bool
}

// AgentRow is one agent of the roster.
type AgentRow struct {
	ID          string
	Name        string
	Description string
	Routes      string
	MCP         []MCPLine // its MCP servers, as the crew has them
}

// MCPLine is one MCP server of an agent on the roster: its state (GET
// /api/mcp's) and, when it cannot be used, why ("needs login: run crew
// mcp login <name>").
type MCPLine struct {
	Name, State, Note string
}

// ConversationRow is one line of the conversation list.
type ConversationRow struct {
	ID      string
	Title   string
	Agent   string
	Channel string
	Status  string // idle, running, awaiting_approval, halted, failed, closed
	Updated string
	Queued  int
	Root    string // for a delegated conversation, the conversation it answers
}

// HomeView is the home page: the list, and a box to start today's chat.
type HomeView struct {
	Shell
	Conversations []ConversationRow
}

// ConversationView is the chat page of one conversation.
type ConversationView struct {
	Shell
	Conv     ConversationRow
	Items    []Item
	Approval *ApprovalCard // the pending approval, if any
	Question *QuestionBar  // the question (ask_user) waiting for an answer, if any
	// LastSeq is the stream sequence the page reflects; the live feed
	// resumes after it.
	LastSeq uint64
	// Ending tells how the last run ended when it did not simply answer
	// (failed, halted, no reply, a question), until the next message.
	Ending *RunEnding
	// Waiting counts the owner's messages queued behind the running turn.
	Waiting int
	// Team: the conversation leads a team (its page is /c/{id}/team).
	Team bool
	// Active: a run is open or messages wait: the composer's Stop shows.
	Active bool
}

// RunEnding is the chat's notice of how the last run ended.
type RunEnding struct {
	Kind   string // failed, halted, no_reply, asks
	Status string // done, halted, failed
	Reason string
	Text   string // one plain sentence: what happened and what to do
	Spend  string // "$0.0012", "cost unknown"
}

// ArgBlock is one string argument of a tool call shown as text (a
// command, a file's content), with its real line breaks.
type ArgBlock struct {
	Name string
	Text string
}

// Item kinds.
const (
	ItemUser      = "user"
	ItemAssistant = "assistant"
	ItemTool      = "tool"
	ItemNote      = "note"     // harness lines: reminders, steers, fallbacks
	ItemDelegate  = "delegate" // a delegate call, pinned with the child's answer
	ItemQuestion  = "question" // an ask_user call with its answer
)

// Item is one entry of the chat.
type Item struct {
	Kind string
	// Slot is the item's place in the chat projection, from 1: the
	// element a live patch replaces (0: a dropped or queued message,
	// shown after the items).
	Slot int
	// Text is the message text (user, note) or the assistant's Markdown
	// source; HTML is the assistant's text rendered and sanitized.
	Text     string
	HTML     string
	Tool     *ToolCard
	Delegate *DelegateCard
	Question *QuestionItem
	Queued   bool // a user message waiting for the running turn
	// QueueN is a waiting message's place in the queue, from 1 (its
	// remove button); Dropped: a stop dropped it, it is never answered;
	// Stopped: a reply the owner stopped while it streamed.
	QueueN  int
	Dropped bool
	Stopped bool
	Time    string
	// Notes are the turn notes (memory) the model read with a user message;
	// Command the kit command it invoked.
	Notes   string
	Command string
	// Team: a user-role message the team runtime delivered (team events).
	Team bool
	// Canvas is the canvas notes the model read with a user message.
	Canvas string
	// Task: a background command's notification (the harness's words).
	Task bool
	// Images are the images an owner's message came with (a web upload, a
	// Telegram photo), shown as thumbnails; Files its other attachments.
	Images []Attached
	Files  []string
	// Hit: the search hit the page was opened at (/c/<id>?hit=…),
	// shown highlighted and scrolled to.
	Hit bool
	// Interrupted, on an assistant's text, says the reply broke after the
	// text was shown and what the harness did next (a retry, another
	// route, a failure).
	Interrupted string
}

// Attached is one image of a message: where the page loads it, and its
// workspace path.
type Attached struct {
	URL  string
	Name string
}

// ToolCard is one tool call with its arguments and result.
type ToolCard struct {
	CallID string
	Tool   string
	Args   string // pretty JSON of the arguments not in Blocks
	// Blocks are the string arguments shown as text (command, content).
	Blocks  []ArgBlock
	Output  string
	IsError bool
	Outcome string // denied, expired, max_steps, loop, escalated, interrupted, blocked
	Running bool   // no result yet
	Waiting bool   // no result yet: its approval is pending
	// Child is the run a delegate call ran (runs page only).
	Child *RunCard
	// Nested are a script's calls, one line each, as they finished; Sizes
	// its received_chars and printed_chars once it is done (R-SCR).
	Nested []string
	Sizes  string
	// Page is the web page a browser or fetch_url call was on, if any.
	Page *ToolPage
	// Canvas is the canvas an agent's canvas write made: the chat shows a
	// card (created / edited / rewritten / imported, version, Open).
	Canvas *CanvasCard
	// Todo is a todo_write call's checklist, shown on the card.
	Todo []TodoLine
}

// CanvasCard is one agent write to a canvas, in the chat.
type CanvasCard struct {
	Artifact, Title, Kind, Verb string
	Version                     int
}

// CanvasRow is one canvas in the library.
type CanvasRow struct {
	ID, Title, Kind, Author, Updated string
	Version                          int
	Bytes                            int64
}

// CanvasesView is the library of every canvas; Open, when set, is the
// canvas shown in the panel.
type CanvasesView struct {
	Shell
	Canvases []CanvasRow
	Query    string
	Open     string
}

// TodoLine is one line of a todo_write checklist.
type TodoLine struct {
	Text string
	Done bool
}

// ToolPage is what a web tool's card shows of its page: title, URL, the
// screenshots inline, and whether the output is an outline (folded).
type ToolPage struct {
	Title   string
	URL     string
	Images  []string // URLs of the result's images (served from the conversation's spills)
	Outline bool
}

// DelegateCard pins a delegate call in the master's thread: who answered,
// the answer, and where the child's own conversation is.
type DelegateCard struct {
	CallID       string
	Agent        string // the delegate's id
	AgentName    string // as the roster names it; the id when unnamed
	Task         string // the brief it was given
	Conversation string // the child conversation
	Status       string // running, done, halted, failed
	Cost         string // "$0.0021", "cost unknown"; empty while running
	Answer       string // the result as the master read it (Markdown)
	HTML         string // Answer rendered and sanitized
}

// ApprovalCard is the approval bar.
type ApprovalCard struct {
	ID   string
	Tool string
	Args string // pretty JSON of the arguments not in Blocks
	// Blocks are the string arguments shown as text (command, content).
	Blocks    []ArgBlock
	Reason    string
	ExpiresAt time.Time
	ExpiresIn string // "9m 12s", computed when rendered on the server
	// Source names an outside tool's origin: "MCP server notes, tool search".
	Source string
	// From and Conversation name the delegated agent that asked, when the
	// approval is a child's shown on its root.
	From         string
	Conversation string
}

// QuestionBar is the answer box of a pending question (ask_user): its
// choices as buttons, and a text field for an answer in the owner's words.
type QuestionBar struct {
	ID        string
	Question  string
	Choices   []string
	ExpiresAt time.Time
	ExpiresIn string // "9m 12s", computed when rendered on the server
}

// QuestionItem is an ask_user call in the chat once settled: the question
// and its answer, or that nobody answered in time.
type QuestionItem struct {
	CallID   string
	Question string
	Answer   string
	Expired  bool
	Refused  string // the call was refused (a question that could not be shown)
}

// RunsView is the runs page of one conversation.
type RunsView struct {
	Shell
	Conv ConversationRow
	Runs []RunCard
	// ForkRoutes are offered to the steps' fork forms.
	ForkRoutes []string
	// LastSeq is the conversation's stream sequence the page reflects; the
	// page follows the conversation's stream from there.
	LastSeq uint64
}

// RunCard is one run with its steps and child runs.
type RunCard struct {
	ID       string
	Agent    string
	Trigger  string
	Status   string // running, done, halted, failed
	Reason   string
	Error    string
	Notice   string // for a failed or halted run, what happened and what to do
	Started  string
	Duration string
	Tokens   string // "1,234 in / 56 out"
	Cost     string // "$0.0012", with "+ 2 calls of unknown cost" when so
	Steps    []StepCard
	Children []RunCard
	// ForkedFrom and Forks link a fork's run and its origin (R-X-2).
	ForkedFrom *ForkLink
	Forks      []ForkLink
}

// StepCard is one step of a run.
type StepCard struct {
	N          int
	ModelCalls []ModelCallLine
	ToolCalls  []ToolCard
	Lines      []string  // fallbacks, escalation, approvals, reminders, steers
	Fork       *ForkForm // "Fork from here", when the run can be forked
}

// ModelCallLine is one model call of a step.
type ModelCallLine struct {
	Route   string
	Model   string
	Tokens  string
	Cost    string // "unknown" when not reported
	Latency string
	Text    string
	Tools   string // names of the tools it asked for
	Error   string
}

// LoginView is the login form (non-loopback servers).
type LoginView struct {
	Error string
	CSRF  string
}

// ForkLink is one end of a fork on the runs page: the run on the other
// side, its conversation, the step and the fork's route.
type ForkLink struct {
	RunID, Conversation, Route string
	Step                       int
}

// ForkForm is a step's "Fork from here" form (R-X-2).
type ForkForm struct {
	RunID string
	Step  int
	CSRF  string
}
