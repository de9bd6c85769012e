package loop

import (
	"bytes"
	"cmp"
	"context"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools/fence"
	"github.com/my-agent-crew/crew/tools/kit"
)

// Roles of model-visible messages.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one entry of the model-visible history.
type Message struct {
	Role       string                   `json:"role"`
	Text       string                   `json:"text,omitempty"`
	ToolCalls  []events.ToolCallRequest `json:"tool_calls,omitempty"`
	ToolCallID string                   `json:"tool_call_id,omitempty"`
	Tool       string                   `json:"tool,omitempty"`
	IsError    bool                     `json:"is_error,omitempty"`
	// Said is the owner's own words when Text (what the model reads) adds
	// turn notes or a kit command's prompt; Notes is the notes block.
	Said  string `json:"said,omitempty"`
	Notes string `json:"notes,omitempty"`
	// Canvas is the message's canvas notes (R-CTX-3): the model reads them
	// framed during the run this message opened, CanvasShownLine after.
	Canvas string `json:"canvas,omitempty"`
	// CanvasRef is the canvas a canvas tool's result read or wrote (the
	// chat's card).
	CanvasRef *events.CanvasRef `json:"canvas_ref,omitempty"`
	// Delegate is the child run a delegate call's result came from.
	Delegate *events.DelegateResult `json:"delegate,omitempty"`
	// Outcome says why the harness answered a tool call instead of the
	// tool (denied, expired, …), as the chat labels it.
	Outcome string `json:"outcome,omitempty"`
	// Team: team events the runtime delivered, not the owner's words.
	Team bool `json:"team,omitempty"`
	// Task: a background command's notification (task_notification).
	Task bool `json:"task,omitempty"`
	// Parts and Meta are a tool result's parts (an image kept under
	// spill/, a file) and structured detail (a page's url and title), as
	// tool_completed recorded them, for the UI. Meta stays JSON: a
	// snapshot is gob, which cannot hold arbitrary values.
	Parts []events.ToolPart `json:"parts,omitempty"`
	Meta  json.RawMessage   `json:"meta,omitempty"`
	// Spill is where a cut result's whole output was kept.
	Spill string `json:"spill,omitempty"`
	// Attachments are the workspace files an owner's message came with (a
	// Telegram photo, a web upload).
	Attachments []string `json:"attachments,omitempty"`
	// Stopped: the owner stopped the run while this reply streamed; Text
	// is what it had written by then.
	Stopped bool `json:"stopped,omitempty"`
}

// Pending is a message or steer stored but not yet in the history.
type Pending struct {
	EventID     string   `json:"event_id"`
	Text        string   `json:"text"`             // what the model will read
	Said        string   `json:"said,omitempty"`   // the owner's words, when Text differs
	Notes       string   `json:"notes,omitempty"`  // the turn notes block, if any
	Canvas      string   `json:"canvas,omitempty"` // the canvas notes, if any
	Attachments []string `json:"attachments,omitempty"`
	// Seq is the event's stream sequence: steers left over when a run ends
	// join the queued messages in the order they were stored.
	Seq uint64 `json:"seq,omitempty"`
	// Team: the team runtime delivered it (mail, an assignment), not the
	// owner.
	Team bool `json:"team,omitempty"`
	// Task: a background command's notification, the harness's words.
	Task bool `json:"task,omitempty"`
}

// withheldText replaces owner's words a UserPromptSubmit hook blocked.
const withheldText = "[Withheld: the owner's UserPromptSubmit hook blocked this message; its words were not passed on.]"

// withheld is m with the owner's words replaced; its turn notes stay, since
// the conversation was told them when the message was stored.
func withheld(m Message) Message {
	var notes *events.TurnNotes
	if m.Notes != "" {
		notes = &events.TurnNotes{Text: m.Notes}
	}
	return Message{Role: RoleUser, Text: ModelText(notes, "", withheldText), Said: "(withheld by the owner's hook)", Notes: m.Notes, Canvas: m.Canvas}
}

// userMessage is a pending message as it enters the history.
func (p Pending) userMessage() Message {
	return Message{Role: RoleUser, Text: p.Text, Said: p.Said, Notes: p.Notes, Team: p.Team, Task: p.Task, Canvas: p.Canvas, Attachments: p.Attachments}
}

// ModelText is what the model reads for a turn-opening message: the notes
// framed, then the kit command's prompt or the text as written. With no
// notes and no command it is the text, byte for byte.
func ModelText(notes *events.TurnNotes, prompt, text string) string {
	body := text
	if prompt != "" {
		body = prompt
	}
	return Framed(notes, body)
}

func pending(env events.Envelope, notes *events.TurnNotes, prompt, text string) Pending {
	p := Pending{EventID: env.ID, Seq: env.Seq, Text: ModelText(notes, prompt, text)}
	if p.Text != text {
		p.Said = text
	}
	if notes != nil {
		p.Notes = notes.Text
	}
	return p
}

// Approval is a gated tool call waiting for (or just given) a decision.
type Approval struct {
	ID        string    `json:"id"`
	RunID     string    `json:"run_id"`
	Step      int       `json:"step"`
	CallID    string    `json:"call_id"`
	Tool      string    `json:"tool"`
	Reason    string    `json:"reason,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
	Decision  string    `json:"decision,omitempty"` // empty while pending
	Always    bool      `json:"always,omitempty"`
}

// Question is an ask_user call waiting for (or just given) the owner's
// answer; Outcome is empty while it waits.
type Question struct {
	ID        string    `json:"id"`
	RunID     string    `json:"run_id"`
	Step      int       `json:"step"`
	CallID    string    `json:"call_id"`
	Text      string    `json:"text"`
	Choices   []string  `json:"choices,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
	Outcome   string    `json:"outcome,omitempty"` // QuestionAnswered or QuestionExpired
	Answer    string    `json:"answer,omitempty"`
	Channel   string    `json:"channel,omitempty"`
}

// Question outcomes.
const (
	QuestionAnswered = "answered"
	QuestionExpired  = "expired"
	// QuestionWithdrawn: the run was stopped while the question waited.
	QuestionWithdrawn = "withdrawn"
)

// State is what a turn needs of its conversation, folded from the
// conversation's events. It is a pure function of those events: the same
// events give the same State, from a snapshot or from a cold replay.
type State struct {
	// RunUntrusted names what untrusted content the open run has read
	// (a fenced tool result, a message from someone not the owner), ""
	// for none: memory writes after it carry the mark (R-X-7).
	RunUntrusted string `json:"run_untrusted,omitempty"`

	Conversation string    `json:"conversation"`
	Seq          uint64    `json:"seq"` // stream sequence of the last applied event
	Agent        string    `json:"agent,omitempty"`
	Channel      string    `json:"channel,omitempty"`
	Autonomous   bool      `json:"autonomous,omitempty"`
	ApprovalTTL  int       `json:"approval_ttl_seconds,omitempty"`
	Messages     []Message `json:"messages"`

	// Queued are owner messages stored and not yet answered. A run's start
	// moves them into Messages, all together (R-IN-2). BusyQueued says one
	// arrived while a run was open.
	Queued     []Pending `json:"queued,omitempty"`
	BusyQueued bool      `json:"busy_queued,omitempty"`
	// Steers wait for the running turn's next tool boundary.
	Steers []Pending `json:"steers,omitempty"`
	// Dropped are waiting messages a stop dropped (scope queue or all):
	// never answered, shown "dropped" in the chat.
	Dropped []Pending `json:"dropped,omitempty"`
	// Stop is the owner's stop of the open run, stored and not yet taken
	// effect: the next pass closes the run stopped, after a crash too.
	Stop *StopRequest `json:"stop,omitempty"`
	// Notices are stopped tasks' notifications that came while a run was
	// open: they join Messages when it ends.
	Notices []Message `json:"notices,omitempty"`
	// Tasks are the conversation's background commands (shell_run with
	// run_in_background), by task id: started, stopping, ended.
	Tasks map[string]*Task `json:"tasks,omitempty"`

	// OpenRun is the run started and not finished (a crash leaves it set);
	// Step is its last model-call step.
	OpenRun string `json:"open_run,omitempty"`
	Step    int    `json:"step,omitempty"`
	// Calling holds tool calls started (tool_called) without a result.
	Calling map[string]bool `json:"calling,omitempty"`
	// Approvals of the open run by call id; AutoApprove the tools approved
	// with "always" in this conversation.
	Approvals   map[string]*Approval `json:"approvals,omitempty"`
	AutoApprove []string             `json:"auto_approve,omitempty"`
	// Decided remembers every answered approval of the conversation (id →
	// decision), so a late second answer is a conflict, not "unknown".
	Decided map[string]string `json:"decided,omitempty"`
	// Questions of the open run by call id (ask_user); Asked remembers
	// every settled question of the conversation (id → outcome), so a late
	// second answer is a conflict, not "unknown".
	Questions map[string]*Question `json:"questions,omitempty"`
	Asked     map[string]string    `json:"asked,omitempty"`
	// External maps channel message ids (telegram:<update_id>) to the
	// event that stored them, so a redelivered update is not stored twice.
	External map[string]string `json:"external,omitempty"`

	// CostUSD sums known model costs; UnknownCostCalls counts successful
	// calls whose cost was not reported (never counted as zero).
	CostUSD          float64 `json:"cost_usd"`
	UnknownCostCalls int     `json:"unknown_cost_calls"`
	LastHalt         string  `json:"last_halt,omitempty"`
	Closed           bool    `json:"closed,omitempty"`

	// RunPrompt are the owner's words the open run started on, and
	// PromptChecked says its UserPromptSubmit hooks ran (R-LOOP-8): a run
	// resumed after a crash runs them if they did not.
	RunPrompt     []string `json:"run_prompt,omitempty"`
	PromptChecked bool     `json:"prompt_checked,omitempty"`
	RunFrom       int      `json:"run_from,omitempty"` // index in Messages of the open run's first message
	// Resumed counts the open run's run_resumed: restarts that cut it while
	// it worked (R-X-4).
	Resumed int `json:"resumed,omitempty"`

	// Told is what this conversation has been told of each memory item
	// (turn notes), folded from the stored messages (R-CTX-2).
	Told map[string]events.NoteTold `json:"told,omitempty"`
	// Canvas is what this conversation knows of each canvas, folded from
	// canvas tool results and canvas notes (R-CTX-3); RunCanvas what the
	// open run wrote (the per-turn limits).
	Canvas    map[string]CanvasMark `json:"canvas,omitempty"`
	RunCanvas RunCanvas             `json:"run_canvas,omitzero"`
	// RootSource is the channel of a delegated conversation's root.
	RootSource string `json:"root_source,omitempty"`

	// Delegation: a child conversation names its root and parent; CostCap
	// replaces the agent's cap when set. Delegations counts delegate calls
	// made here (R-HOME-6: at most 8).
	RootID             string   `json:"root_id,omitempty"`
	ParentConversation string   `json:"parent_conversation,omitempty"`
	ParentCallID       string   `json:"parent_call_id,omitempty"`
	ParentRunID        string   `json:"parent_run_id,omitempty"`
	CostCap            *float64 `json:"cost_cap,omitempty"`
	Delegations        int      `json:"delegations,omitempty"`
	// DelegateRun is the run the delegation started here (its run_started
	// names the parent run); DelegateEnd is how it ended, once it has.
	DelegateRun string  `json:"delegate_run,omitempty"`
	DelegateEnd *RunEnd `json:"delegate_end,omitempty"`

	// Guard is the loop guard over the open run's replies (R-LOOP-3) and
	// Escalated says the open run has escalated (R-LOOP-4: once per run),
	// both folded from the log so a resumed turn decides as an
	// uninterrupted one would.
	Guard     Guard `json:"guard"`
	Escalated bool  `json:"escalated,omitempty"`

	// Loaded are the MCP tools tool_search declared in this conversation,
	// in the order found, folded from its results' meta (R-MCP): they are
	// declared to the model from the next call on, after a restart too.
	Loaded []string `json:"loaded,omitempty"`
	// Teams (R-TEAM): Team and Member seat a teammate's conversation;
	// MailSeen is the last mailbox sequence delivered here and Assigned the
	// last task a delivery assigned; LastRun and LastEnd are the latest
	// finished run and how it ended (the teammate's report).
	Team     string  `json:"team,omitempty"`
	Member   string  `json:"member,omitempty"`
	MailSeen uint64  `json:"mail_seen,omitempty"`
	Assigned string  `json:"assigned,omitempty"`
	LastRun  string  `json:"last_run,omitempty"`
	LastEnd  *RunEnd `json:"last_end,omitempty"`

	// Compaction is what the model reads instead of parts of Messages
	// (context_compacted, R-LOOP-7); Messages stay whole for the chat.
	Compaction Compaction `json:"compaction"`
	// Shown are replies that broke after their text reached the chat
	// (model_retried, route_fallback or a failed model_called marked
	// interrupted): the chat keeps them where they stood, marked
	// interrupted, with what came next; the model never reads them.
	Shown []ShownText `json:"shown,omitempty"`
	// TokenRatio is, by route, the provider's prompt tokens over the
	// harness's estimate on the last turn call that reported both: it
	// calibrates the measure compaction decides on.
	TokenRatio map[string]float64 `json:"token_ratio,omitempty"`
	// NestedCalls counts the open run's script calls (nested_call): its
	// scripts share max_steps × 10 (R-SCR).
	NestedCalls int `json:"nested_calls,omitempty"`
	// Nesting are the nested calls of the scripts still running, by
	// script call id, for the chat card to show at once.
	Nesting map[string][]events.NestedCall `json:"nesting,omitempty"`
	// Route, on a fork, is the one route the conversation runs on
	// (conversation_forked, R-X-2): it replaces the agent's routes.
	Route string `json:"route,omitempty"`
	// Pin, on a fork, is the system prompt the original's step sent, for
	// the fork's run to send again at that step (conversation_forked).
	Pin *SystemPin `json:"pin,omitempty"`
}

// Task is one background command of the conversation, as its events tell
// it: task_started, a stop asked (task_stop_requested, or a
// run_stop_requested naming it), and its task_notification.
type Task struct {
	ID      string    `json:"id"`
	CallID  string    `json:"call_id,omitempty"`
	FromRun string    `json:"from_run,omitempty"`
	Command string    `json:"command"`
	Started time.Time `json:"started"`
	// StopBy is who asked for it to stop ("" none yet); the first ask
	// counts.
	StopBy string `json:"stop_by,omitempty"`
	// End is its notification, once it ended.
	End   *events.TaskNotification `json:"end,omitempty"`
	Ended time.Time                `json:"ended,omitzero"`
}

// Task states (GET /api/conversations/{id}/tasks).
const (
	TaskRunning  = "running"
	TaskStopping = "stopping" // a stop is stored, the process not yet gone
	TaskExited   = "exited"   // ended by itself: exit_code says how
	TaskFailed   = "failed"   // timed out, killed by a signal, or did not run
	TaskStopped  = "stopped"  // killed by a stop (stopped_by says whose)
)

// State is the task's state word.
func (t *Task) State() string {
	switch {
	case t.End == nil && t.StopBy != "":
		return TaskStopping
	case t.End == nil:
		return TaskRunning
	case t.End.StoppedBy != "":
		return TaskStopped
	case t.End.Failure != "" || t.End.TimedOut || t.End.Signal != "":
		return TaskFailed
	}
	return TaskExited
}

// RunningTasks are the ids of the tasks not ended, in id order.
func (s *State) RunningTasks() []string {
	var ids []string
	for _, id := range sortedKeys(s.Tasks) {
		if s.Tasks[id].End == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// stopTask records who asked task id to stop (the first ask counts).
func (s *State) stopTask(id, by string) {
	if t := s.Tasks[id]; t != nil && t.End == nil && t.StopBy == "" {
		t.StopBy = by
	}
}

// StopRequest is a run_stop_requested of the open run.
type StopRequest struct {
	RunID   string    `json:"run_id"`
	By      string    `json:"by"`
	Scope   string    `json:"scope"`
	EventID string    `json:"event_id"`
	At      time.Time `json:"at"`
}

// ShownText is a reply cut after its text was shown: At is how many
// messages the history held then (the chat shows it before Messages[At]),
// Then what the harness did next.
type ShownText struct {
	At    int    `json:"at"`
	RunID string `json:"run_id,omitempty"`
	Text  string `json:"text"`
	Then  string `json:"then"`
}

// SystemPin is a system prompt held for one step of one run.
type SystemPin struct {
	RunID  string `json:"run_id"`
	Step   int    `json:"step"`
	System string `json:"system"`
}

// RunEnd is how a delegated child run ended, as its parent is told.
type RunEnd struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
	// Text is the run's last assistant text; Question what it asked the
	// owner when it ended on ask_user.
	Text     string `json:"text,omitempty"`
	Question string `json:"question,omitempty"`
	// CostUSD and UnknownCostCalls are the conversation's totals then.
	CostUSD          float64 `json:"cost_usd"`
	UnknownCostCalls int     `json:"unknown_cost_calls,omitempty"`
}

// Apply folds one event of the conversation into the state. Events at or
// below Seq are ignored, so applying a tail twice is harmless.
func (s *State) Apply(env events.Envelope) error {
	if env.Seq != 0 && env.Seq <= s.Seq {
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		return err
	}
	switch e := e.(type) {
	case *events.ConversationOpened:
		s.Agent, s.Channel, s.Autonomous, s.ApprovalTTL = e.Agent, e.Channel, e.Autonomous, e.ApprovalTTLSeconds
		s.RootID, s.ParentConversation, s.ParentCallID, s.CostCap = e.RootID, e.ParentConversation, e.ParentCallID, e.CostCapUSD
		s.ParentRunID, s.RootSource = e.ParentRunID, e.RootSource
		s.Team, s.Member = e.Team, e.Member
	case *events.ConversationClosed:
		s.Closed = true
	case *events.MessageReceived:
		if e.ExternalID != "" {
			if s.External == nil {
				s.External = map[string]string{}
			}
			s.External[e.ExternalID] = env.ID
		}
		s.tell(e.TurnNotes)
		s.tellCanvas(e.CanvasNotes)
		p := pending(env, e.TurnNotes, e.Prompt, attachedText(e.Text, e.Attachments))
		p.Attachments = e.Attachments
		if d := e.Team; d != nil {
			p = teamPending(env, e.TurnNotes, d)
			s.MailSeen = max(s.MailSeen, d.Through)
			if d.Assigned != "" {
				s.Assigned = d.Assigned
			}
		}
		s.Queued = append(s.Queued, withCanvas(p, e.CanvasNotes))
		if s.OpenRun != "" {
			s.BusyQueued = true
		}
	case *events.TaskStarted:
		if s.Tasks == nil {
			s.Tasks = map[string]*Task{}
		}
		s.Tasks[e.TaskID] = &Task{ID: e.TaskID, CallID: e.CallID, FromRun: e.FromRun, Command: e.Command, Started: env.Time}
	case *events.TaskStopRequested:
		s.stopTask(e.TaskID, e.By)
	case *events.TaskNotification:
		if t := s.Tasks[e.TaskID]; t != nil && t.End == nil {
			t.End, t.Ended = e, env.Time
		}
		if e.StoppedBy != "" {
			// The owner stopped it: told in the history (after the open
			// run's calls have their results), no round of its own.
			m := Message{Role: RoleUser, Text: TaskText(e), Task: true}
			if s.OpenRun != "" {
				s.Notices = append(s.Notices, m)
			} else {
				s.Messages = append(s.Messages, m)
			}
			break
		}
		s.Queued = append(s.Queued, Pending{EventID: env.ID, Seq: env.Seq, Text: TaskText(e), Task: true})
		if s.OpenRun != "" {
			s.BusyQueued = true
		}
	case *events.SteerReceived:
		if e.ExternalID != "" {
			if s.External == nil {
				s.External = map[string]string{}
			}
			s.External[e.ExternalID] = env.ID
		}
		s.tell(e.TurnNotes)
		s.tellCanvas(e.CanvasNotes)
		p := pending(env, e.TurnNotes, e.Prompt, e.Text)
		if d := e.Team; d != nil {
			p = teamPending(env, e.TurnNotes, d)
			s.MailSeen = max(s.MailSeen, d.Through)
		}
		s.Steers = append(s.Steers, withCanvas(p, e.CanvasNotes))
	case *events.SteersApplied:
		applied := map[string]bool{}
		for _, id := range e.SteerIDs {
			applied[id] = true
		}
		kept := s.Steers[:0]
		for _, p := range s.Steers {
			if applied[p.EventID] && !p.Team {
				s.Guard.Reset() // the owner's new words: the count starts again
				break
			}
		}
		for _, p := range s.Steers {
			switch {
			case applied[p.EventID] && e.Withheld:
				s.Messages = append(s.Messages, withheld(p.userMessage()))
			case applied[p.EventID]:
				if p.Team && s.RunUntrusted == "" { // another agent's words, not the owner's
					s.RunUntrusted = "a team message"
				}
				s.Messages = append(s.Messages, p.userMessage())
			default:
				kept = append(kept, p)
			}
		}
		s.Steers = kept
	case *events.RunStopRequested:
		s.applyStop(env, e)
	case *events.RunStarted:
		s.OpenRun, s.Step, s.LastHalt = e.RunID, 0, ""
		s.Stop = nil
		s.RunPrompt, s.PromptChecked, s.RunFrom = nil, false, len(s.Messages)
		s.Resumed = 0
		s.RunUntrusted = ""
		for _, q := range s.Queued {
			if q.Team && s.RunUntrusted == "" { // another agent's words, not the owner's
				s.RunUntrusted = "a team message"
			}
			s.Messages = append(s.Messages, q.userMessage())
			s.RunPrompt = append(s.RunPrompt, cmp.Or(q.Said, q.Text))
		}
		s.Queued, s.BusyQueued = nil, false
		s.Calling, s.Approvals, s.Questions = nil, nil, nil
		s.Guard, s.Escalated = Guard{}, false
		s.RunCanvas = RunCanvas{}
		if s.ParentRunID != "" && s.DelegateRun == "" { // a delegated conversation's first run
			s.DelegateRun = e.RunID
		}
	case *events.RunResumed:
		if e.RunID == s.OpenRun {
			s.Resumed++
		}
	case *events.HookRan:
		if e.Hook == kit.UserPromptSubmit && e.RunID == s.OpenRun && e.Step == 0 {
			s.PromptChecked = true
		}
	case *events.RunFinished:
		if s.OpenRun == e.RunID {
			if e.Status == events.RunHalted && e.Reason == "hook" && s.Step == 0 {
				// UserPromptSubmit blocked the run's opening words: they
				// never reach a model, now or in a later turn.
				for i := s.RunFrom; i < len(s.Messages); i++ {
					if s.Messages[i].Role == RoleUser {
						s.Messages[i] = withheld(s.Messages[i])
					}
				}
			}
			s.OpenRun, s.Step, s.Calling, s.Approvals, s.Questions = "", 0, nil, nil, nil
			s.Guard, s.Escalated = Guard{}, false
			s.Stop = nil
			s.Messages, s.Notices = append(s.Messages, s.Notices...), nil
			// Steers that never reached a tool boundary (the run ended
			// first) are not lost: they wait as messages for the next turn,
			// in the order they were stored among the messages queued
			// meanwhile — their turn notes tell what changed since the one
			// stored before, so the model must read them in that order.
			if len(s.Steers) > 0 {
				s.Queued = append(s.Queued, s.Steers...)
				if !slices.ContainsFunc(s.Queued, func(p Pending) bool { return p.Seq == 0 }) {
					slices.SortStableFunc(s.Queued, func(a, b Pending) int { return cmp.Compare(a.Seq, b.Seq) })
				}
				s.BusyQueued = true
			}
			s.Steers = nil
			if e.Status == events.RunHalted {
				s.LastHalt = e.Reason
			}
			if e.RunID == s.DelegateRun && s.DelegateEnd == nil {
				s.DelegateEnd = s.runEnd(e)
			}
			if s.Member != "" {
				s.LastRun, s.LastEnd = e.RunID, s.runEnd(e)
			}
		}
	case *events.ModelCalled:
		if e.CostUSD != nil {
			s.CostUSD += *e.CostUSD
		} else if e.Error == "" {
			s.UnknownCostCalls++
		}
		if !e.InTurn() { // the harness's own call: its cost counts, its text is no reply
			break
		}
		if e.InputTokens > 0 && e.EstimatedTokens > 0 {
			if s.TokenRatio == nil {
				s.TokenRatio = map[string]float64{}
			}
			s.TokenRatio[e.Route] = float64(e.InputTokens) / float64(e.EstimatedTokens)
		}
		if p := s.Pin; p != nil && e.RunID == p.RunID && e.Step == p.Step && e.Error == "" {
			s.Pin = nil // the pinned step is answered
		}
		if e.RunID == s.OpenRun && e.Step > s.Step {
			s.Step = e.Step
		}
		if e.Stopped && e.Text != "" { // what the owner saw stream before the stop stays
			s.Messages = append(s.Messages, Message{Role: RoleAssistant, Text: e.Text, Stopped: true})
		} else if e.Error != "" && e.Text != "" {
			s.Shown = append(s.Shown, ShownText{At: len(s.Messages), RunID: e.RunID, Text: e.Text, Then: "the model call failed: " + e.Error})
		}
		if e.Error == "" {
			s.Messages = append(s.Messages, Message{Role: RoleAssistant, Text: e.Text, ToolCalls: e.ToolCalls})
			if e.RunID == s.OpenRun {
				s.Guard.Observe(e.ToolCalls)
			}
		}
	case *events.ModelRetried: // a reply cut at its limit cost what it cost
		if e.CostUSD != nil {
			s.CostUSD += *e.CostUSD
		} else if e.OutputTokens > 0 {
			s.UnknownCostCalls++
		}
		if e.Interrupted && e.Text != "" {
			then := fmt.Sprintf("retried on %s (attempt %d)", e.Route, e.Attempt)
			if e.Error != "" {
				then += " after: " + e.Error
			}
			s.Shown = append(s.Shown, ShownText{At: len(s.Messages), RunID: e.RunID, Text: e.Text, Then: then})
		}
	case *events.RouteFallback:
		if e.Interrupted && e.Text != "" {
			s.Shown = append(s.Shown, ShownText{At: len(s.Messages), RunID: e.RunID, Text: e.Text, Then: fmt.Sprintf("moved from %s to %s after: %s", e.From, e.To, e.Error)})
		}
	case *events.ContextCompacted:
		s.Compaction.apply(e)
	case *events.ConversationForked:
		if err := s.applyFork(e); err != nil {
			return err
		}
	case *events.GuardReminded:
		s.Messages = append(s.Messages, Message{Role: RoleUser, Text: e.Text})
		if e.RunID == s.OpenRun {
			s.Guard.Reminded = true
		}
	case *events.Escalated:
		if e.RunID == s.OpenRun {
			s.Escalated = true
			if e.Reason == "loop" { // the repeated calls were refused: count afresh
				s.Guard.Reset()
			}
		}
	case *events.ToolCalled:
		if e.Tool == DelegateTool {
			s.Delegations++
		}
		if s.Calling == nil {
			s.Calling = map[string]bool{}
		}
		s.Calling[e.CallID] = true
	case *events.ToolCompleted:
		if e.RunID == s.OpenRun && s.RunUntrusted == "" && strings.Contains(e.Output, fence.Marker) {
			s.RunUntrusted = e.Tool
		}
		if d := e.Delegate; d != nil { // the child's spending is the parent's
			usd, unknown := d.Spent()
			s.CostUSD += usd
			s.UnknownCostCalls += unknown
		}
		delete(s.Calling, e.CallID)
		delete(s.Approvals, e.CallID)
		delete(s.Questions, e.CallID)
		s.canvasResult(e)
		if e.Tool == ToolSearchTool {
			s.load(e.Meta["loaded"])
		}
		m := Message{Role: RoleTool, Text: e.Output, ToolCallID: e.CallID, Tool: e.Tool, IsError: e.IsError, Delegate: e.Delegate, Outcome: e.Outcome, Parts: e.Parts, CanvasRef: e.Canvas, Spill: e.SpillPath}
		if len(e.Meta) > 0 {
			m.Meta, _ = json.Marshal(e.Meta)
		}
		if e.Tool == ToolScriptTool {
			delete(s.Nesting, e.CallID)
		}
		s.Messages = append(s.Messages, m)
	case *events.NestedCall:
		// A script's canvas call and delegation count as direct ones do.
		s.canvasRef(e.Canvas, e.IsError, e.RunID)
		if d := e.Delegate; d != nil {
			s.Delegations++
			usd, unknown := d.Spent()
			s.CostUSD += usd
			s.UnknownCostCalls += unknown
		}
		if e.RunID == s.OpenRun && e.Untrusted && s.RunUntrusted == "" {
			s.RunUntrusted = e.Tool + " (in a script)"
		}
		if e.RunID == s.OpenRun {
			s.NestedCalls++
			if s.Nesting == nil {
				s.Nesting = map[string][]events.NestedCall{}
			}
			// Stored as each call ends; kept in the order the script wrote them.
			ns := s.Nesting[e.CallID]
			i, _ := slices.BinarySearchFunc(ns, e.N, func(x events.NestedCall, k int) int { return cmp.Compare(x.N, k) })
			s.Nesting[e.CallID] = slices.Insert(ns, i, *e)
		}
	case *events.ApprovalRequested:
		if s.Approvals == nil {
			s.Approvals = map[string]*Approval{}
		}
		s.Approvals[e.CallID] = &Approval{ID: e.ApprovalID, RunID: e.RunID, Step: e.Step, CallID: e.CallID, Tool: e.Tool, Reason: e.Reason, ExpiresAt: e.ExpiresAt}
	case *events.QuestionAsked:
		if s.Questions == nil {
			s.Questions = map[string]*Question{}
		}
		s.Questions[e.CallID] = &Question{ID: e.QuestionID, RunID: e.RunID, Step: e.Step, CallID: e.CallID, Text: e.Question,
			Choices: e.Choices, ExpiresAt: e.ExpiresAt}
	case *events.QuestionAnswered:
		s.settleQuestion(e.QuestionID, QuestionAnswered, e.Answer, e.Channel)
	case *events.QuestionExpired:
		if e.Withdrawn {
			s.settleQuestion(e.QuestionID, QuestionWithdrawn, "", "")
			break
		}
		s.settleQuestion(e.QuestionID, QuestionExpired, "", "")
	case *events.ApprovalDecided:
		if s.Decided == nil {
			s.Decided = map[string]string{}
		}
		s.Decided[e.ApprovalID] = e.Decision
		for _, a := range s.Approvals {
			if a.ID == e.ApprovalID && a.Decision == "" {
				a.Decision, a.Always = e.Decision, e.Always
				if e.Always && e.Decision == events.DecisionApproved && !slices.Contains(s.AutoApprove, a.Tool) {
					s.AutoApprove = append(s.AutoApprove, a.Tool)
				}
			}
		}
	}
	if env.Seq != 0 {
		s.Seq = env.Seq
	}
	return nil
}

// load adds the names of a tool_search result's meta to Loaded.
func (s *State) load(v any) {
	var names []any
	switch v := v.(type) {
	case []any:
		names = v
	case []string:
		for _, n := range v {
			names = append(names, n)
		}
	}
	for _, n := range names {
		if name, ok := n.(string); ok && !slices.Contains(s.Loaded, name) {
			s.Loaded = append(s.Loaded, name)
		}
	}
}

// tell records what a stored message's notes told the conversation.
func (s *State) tell(n *events.TurnNotes) {
	if n == nil {
		return
	}
	if s.Told == nil {
		s.Told = map[string]events.NoteTold{}
	}
	for _, t := range n.Told {
		s.Told[t.Key] = t
	}
}

// CanvasMark is what a conversation knows of one canvas: the newest
// version it knows whole (read whole, wrote, or told by a complete diff)
// and the newest version it was told of at all.
type CanvasMark struct {
	Seen int `json:"seen,omitempty"`
	Told int `json:"told,omitempty"`
}

// RunCanvas counts the open run's canvas writes.
type RunCanvas struct {
	Created int            `json:"created,omitempty"`
	Writes  map[string]int `json:"writes,omitempty"`
}

func (s *State) mark(artifact string, version int, whole bool) {
	if s.Canvas == nil {
		s.Canvas = map[string]CanvasMark{}
	}
	m := s.Canvas[artifact]
	m.Told = max(m.Told, version)
	if whole {
		m.Seen = max(m.Seen, version)
	}
	s.Canvas[artifact] = m
}

// withCanvas adds a message's canvas notes to its pending entry.
func withCanvas(p Pending, n *events.CanvasNotes) Pending {
	if n != nil {
		p.Canvas = n.Text
	}
	return p
}

// tellCanvas records what a stored message's canvas notes told.
func (s *State) tellCanvas(n *events.CanvasNotes) {
	if n == nil {
		return
	}
	for _, t := range n.Told {
		s.mark(t.Artifact, t.Version, t.Whole)
	}
}

// canvasResult records what a canvas tool's result showed and wrote.
func (s *State) canvasResult(e *events.ToolCompleted) { s.canvasRef(e.Canvas, e.IsError, e.RunID) }

// canvasRef records what a canvas call of run runID showed and wrote.
func (s *State) canvasRef(c *events.CanvasRef, isErr bool, runID string) {
	if c == nil || c.Artifact == "" {
		return
	}
	s.mark(c.Artifact, c.Version, c.Whole)
	if c.Op == "" || isErr || runID != s.OpenRun {
		return
	}
	if c.Op == events.OpCreate || c.Op == events.OpImport && c.Version == 1 {
		s.RunCanvas.Created++
		return
	}
	if s.RunCanvas.Writes == nil {
		s.RunCanvas.Writes = map[string]int{}
	}
	s.RunCanvas.Writes[c.Artifact]++
}

// CanvasSeen maps each canvas to the version the conversation knows whole.
func (s *State) CanvasSeen() map[string]int {
	out := make(map[string]int, len(s.Canvas))
	for id, m := range s.Canvas {
		if m.Seen > 0 {
			out[id] = m.Seen
		}
	}
	return out
}

// CanvasChannel is the channel whose rules the conversation's canvas
// writes follow: its own, or its delegation root's.
func (s *State) CanvasChannel() string {
	if s.RootID != "" {
		return s.RootSource
	}
	return s.Channel
}

// Budget is the conversation's cost cap: the agent's, or the smaller one a
// delegated child was given. Zero means none.
func (s *State) Budget(agentCap float64) float64 {
	if s.CostCap != nil && (agentCap <= 0 || *s.CostCap < agentCap) {
		return *s.CostCap
	}
	return agentCap
}

// PendingApproval returns the undecided approval of the open run, if any.
func (s *State) PendingApproval() *Approval {
	for _, a := range s.Approvals {
		if a.Decision == "" {
			return a
		}
	}
	return nil
}

// settleQuestion records a question's outcome; the first one stored wins.
func (s *State) settleQuestion(id, outcome, answer, channel string) {
	if _, done := s.Asked[id]; done {
		return
	}
	if s.Asked == nil {
		s.Asked = map[string]string{}
	}
	s.Asked[id] = outcome
	for _, q := range s.Questions {
		if q.ID == id && q.Outcome == "" {
			q.Outcome, q.Answer, q.Channel = outcome, answer, channel
		}
	}
}

// PendingQuestion returns the unanswered question of the open run, if any.
func (s *State) PendingQuestion() *Question {
	for _, q := range s.Questions {
		if q.Outcome == "" {
			return q
		}
	}
	return nil
}

// QuestionByID finds a question of the open run.
func (s *State) QuestionByID(id string) *Question {
	for _, q := range s.Questions {
		if q.ID == id {
			return q
		}
	}
	return nil
}

// ApprovalByID finds an approval of the open run.
func (s *State) ApprovalByID(id string) *Approval {
	for _, a := range s.Approvals {
		if a.ID == id {
			return a
		}
	}
	return nil
}

// ReplyCalls are all the tool calls of the last assistant message, in the
// order the model wrote them, and which of them have a result.
func (s *State) ReplyCalls() (calls []events.ToolCallRequest, answered map[string]bool) {
	answered = map[string]bool{}
	for i := len(s.Messages) - 1; i >= 0; i-- {
		m := s.Messages[i]
		if m.Role != RoleAssistant {
			continue
		}
		for _, later := range s.Messages[i+1:] {
			if later.Role == RoleTool {
				answered[later.ToolCallID] = true
			}
		}
		return m.ToolCalls, answered
	}
	return nil, answered
}

// UnansweredCalls are the tool calls of the last assistant message that
// have no result yet, in the order the model wrote them.
func (s *State) UnansweredCalls() []events.ToolCallRequest {
	for i := len(s.Messages) - 1; i >= 0; i-- {
		m := s.Messages[i]
		if m.Role != RoleAssistant {
			continue
		}
		answered := map[string]bool{}
		for _, later := range s.Messages[i+1:] {
			if later.Role == RoleTool {
				answered[later.ToolCallID] = true
			}
		}
		var out []events.ToolCallRequest
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				out = append(out, c)
			}
		}
		return out
	}
	return nil
}

// NeedsTurn reports whether the conversation has work for the turn worker:
// an open run not waiting on a human, or messages not yet answered.
func (s *State) NeedsTurn() bool {
	if s.Closed {
		return false
	}
	if s.OpenRun != "" {
		return s.stopDue() || (s.PendingApproval() == nil && s.PendingQuestion() == nil)
	}
	return len(s.Queued) > 0
}

// Reader is the part of events.Log that loading state needs.
type Reader interface {
	Read(ctx context.Context, filter string, from uint64) iter.Seq2[events.Envelope, error]
	Last(ctx context.Context, filter string) (uint64, error)
}

var _ Reader = (*events.Log)(nil)

// Snapshots stores encoded States by conversation.
type Snapshots interface {
	LoadSnapshot(conversation string) (data []byte, err error) // nil, nil when none
	SaveSnapshot(conversation string, data []byte) error
}

// SnapshotEvery is how long a tail may grow before LoadState writes a new
// snapshot.
const SnapshotEvery = 256

// LoadState rebuilds a conversation's State: the latest snapshot, if any,
// plus every event stored after it. When the tail was long it saves a fresh
// snapshot so the next load stays O(new events). snaps may be nil (cold
// replay).
func LoadState(ctx context.Context, log Reader, snaps Snapshots, conversation string) (*State, error) {
	st := &State{Conversation: conversation}
	if snaps != nil {
		data, err := snaps.LoadSnapshot(conversation)
		if err != nil {
			return nil, fmt.Errorf("load state of %s: %w", conversation, err)
		}
		if data != nil {
			if err := decodeSnapshot(data, st); err != nil {
				// A snapshot is a cache: an unreadable one is replaced by a
				// cold replay, never trusted.
				st = &State{Conversation: conversation}
			}
		}
	}
	applied, err := st.CatchUp(ctx, log)
	if err != nil {
		return nil, err
	}
	if snaps != nil && applied >= SnapshotEvery {
		if err := SaveSnapshot(snaps, st); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// CatchUp applies every event stored after s.Seq and returns how many.
func (s *State) CatchUp(ctx context.Context, log Reader) (int, error) {
	filter := events.Conv(s.Conversation).Filter()
	last, err := log.Last(ctx, filter)
	if err != nil {
		return 0, fmt.Errorf("load state of %s: %w", s.Conversation, err)
	}
	if last <= s.Seq {
		return 0, nil
	}
	applied := 0
	for env, err := range log.Read(ctx, filter, s.Seq+1) {
		if err != nil {
			return applied, fmt.Errorf("load state of %s: %w", s.Conversation, err)
		}
		if err := s.Apply(env); err != nil {
			return applied, fmt.Errorf("load state of %s: %w", s.Conversation, err)
		}
		applied++
	}
	return applied, nil
}

// SaveSnapshot stores st as the conversation's snapshot.
func SaveSnapshot(snaps Snapshots, st *State) error {
	data, err := encodeSnapshot(st)
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", st.Conversation, err)
	}
	if err := snaps.SaveSnapshot(st.Conversation, data); err != nil {
		return fmt.Errorf("snapshot %s: %w", st.Conversation, err)
	}
	return nil
}

// snapshotVersion changes whenever State's shape does; an older snapshot is
// then ignored (cold replay) rather than misread.
const snapshotVersion byte = 25

// Snapshots are gob: about three times as fast to decode as JSON for a long
// history, and a snapshot is a private cache, never an interface.
func encodeSnapshot(st *State) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(snapshotVersion)
	if err := gob.NewEncoder(&buf).Encode(st); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeSnapshot(data []byte, st *State) error {
	if len(data) == 0 || data[0] != snapshotVersion {
		return fmt.Errorf("snapshot version %v, want %d", data[:min(1, len(data))], snapshotVersion)
	}
	return gob.NewDecoder(bytes.NewReader(data[1:])).Decode(st)
}
