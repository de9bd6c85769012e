package loop

import (
	"bytes"
	"cmp"
	"context"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"time"

	"github.com/my-agent-crew/crew/events"
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
//
// What every turn needs is here: the conversation (Origin), the history
// (Messages), the queue (Waiting) and the open run with its calls in
// flight (Running). Each feature's part is a fold of its own (fold.go),
// declared and applied in that feature's file; embedded, so its fields
// read as the state's (st.RootID) and the state's JSON (a fork's
// conversation_forked carries it) is the same as one flat struct's.
type State struct {
	Conversation string    `json:"conversation"`
	Seq          uint64    `json:"seq"` // stream sequence of the last applied event
	Messages     []Message `json:"messages"`
	Origin
	Waiting
	Running

	Delegation      // delegate.go
	CanvasMarks     // canvas.go
	TeamSeat        // seat.go
	MCPLoaded       // tool_search.go
	Scripting       // tool_script.go
	OwnerAsks       // gate.go: approvals and questions
	Spend           // spend.go
	ForkPin         // fork.go
	Untrusted       // untrusted.go
	NotesTold       // told.go
	BackgroundTasks // background.go
	Stopping        // stop.go
	Guarding        // guard.go
	Compacting      // compact.go
	ShownReplies    // recovery.go
}

// Origin is the conversation as conversation_opened set it up, and what
// its channel delivered.
type Origin struct {
	Agent       string `json:"agent,omitempty"`
	Channel     string `json:"channel,omitempty"`
	Autonomous  bool   `json:"autonomous,omitempty"`
	ApprovalTTL int    `json:"approval_ttl_seconds,omitempty"`
	Closed      bool   `json:"closed,omitempty"`
	// External maps channel message ids (telegram:<update_id>) to the
	// event that stored them, so a redelivered update is not stored twice.
	External map[string]string `json:"external,omitempty"`
}

// Waiting is what waits for a turn.
type Waiting struct {
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
	// Notices are stopped tasks' notifications that came while a run was
	// open: they join Messages when it ends.
	Notices []Message `json:"notices,omitempty"`
}

// Running is the open run: started and not finished (a crash leaves it
// set).
type Running struct {
	// OpenRun is the run; Step its last model-call step.
	OpenRun string `json:"open_run,omitempty"`
	Step    int    `json:"step,omitempty"`
	// Calling holds tool calls started (tool_called) without a result.
	Calling map[string]bool `json:"calling,omitempty"`
	// LastHalt is why the latest run halted ("" it did not).
	LastHalt string `json:"last_halt,omitempty"`
	// RunPrompt are the owner's words the open run started on, and
	// PromptChecked says its UserPromptSubmit hooks ran (R-LOOP-8): a run
	// resumed after a crash runs them if they did not.
	RunPrompt     []string `json:"run_prompt,omitempty"`
	PromptChecked bool     `json:"prompt_checked,omitempty"`
	RunFrom       int      `json:"run_from,omitempty"` // index in Messages of the open run's first message
	// Resumed counts the open run's run_resumed: restarts that cut it while
	// it worked (R-X-4).
	Resumed int `json:"resumed,omitempty"`
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
	// Holder is the cluster process that runs it ("" a single process).
	Holder string `json:"holder,omitempty"`
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
// below Seq are ignored, so applying a tail twice is harmless. Each fold
// takes its part of the event (reading foldOn, the rest as it stood
// before it), then the turn's own part: the history, the queue, the open
// run.
func (s *State) Apply(env events.Envelope) error {
	if env.Seq != 0 && env.Seq <= s.Seq {
		return nil
	}
	env = env.Decoded() // decoded once for every fold
	e, err := env.Decode()
	if err != nil {
		return err
	}
	if f, ok := e.(*events.ConversationForked); ok {
		if err := s.applyFork(f); err != nil {
			return err
		}
	} else {
		on := s.on(e)
		for _, f := range s.folds() {
			f.apply(env, on)
		}
		s.applyTurn(env, e)
	}
	if env.Seq != 0 {
		s.Seq = env.Seq
	}
	return nil
}

// decoded is env's payload (State.Apply decoded it, so never an error).
func decoded(env events.Envelope) events.Event {
	e, _ := env.Decode()
	return e
}

// applyTurn folds what every turn reads: the conversation, the history,
// the queue and the open run.
func (s *State) applyTurn(env events.Envelope, e events.Event) {
	switch e := e.(type) {
	case *events.ConversationOpened:
		s.Agent, s.Channel, s.Autonomous, s.ApprovalTTL = e.Agent, e.Channel, e.Autonomous, e.ApprovalTTLSeconds
	case *events.ConversationClosed:
		s.Closed = true
	case *events.MessageReceived:
		s.external(e.ExternalID, env.ID)
		p := pending(env, e.TurnNotes, e.Prompt, attachedText(e.Text, e.Attachments))
		p.Attachments = e.Attachments
		if d := e.Team; d != nil {
			p = teamPending(env, e.TurnNotes, d)
		}
		s.Queued = append(s.Queued, withCanvas(p, e.CanvasNotes))
		if s.OpenRun != "" {
			s.BusyQueued = true
		}
	case *events.TaskNotification:
		if e.StoppedBy != "" || s.Closed {
			// The owner stopped it, or its conversation is closed: told
			// in the history (after the open run's calls have their
			// results), no round of its own.
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
		s.external(e.ExternalID, env.ID)
		p := pending(env, e.TurnNotes, e.Prompt, e.Text)
		if d := e.Team; d != nil {
			p = teamPending(env, e.TurnNotes, d)
		}
		s.Steers = append(s.Steers, withCanvas(p, e.CanvasNotes))
	case *events.SteersApplied:
		applied := map[string]bool{}
		for _, id := range e.SteerIDs {
			applied[id] = true
		}
		kept := s.Steers[:0]
		for _, p := range s.Steers {
			switch {
			case applied[p.EventID] && e.Withheld:
				s.Messages = append(s.Messages, withheld(p.userMessage()))
			case applied[p.EventID]:
				s.Messages = append(s.Messages, p.userMessage())
			default:
				kept = append(kept, p)
			}
		}
		s.Steers = kept
	case *events.RunStopRequested:
		s.drop(e.Dropped)
	case *events.RunStarted:
		s.Running = Running{OpenRun: e.RunID, RunFrom: len(s.Messages)}
		for _, q := range s.Queued {
			s.Messages = append(s.Messages, q.userMessage())
			s.RunPrompt = append(s.RunPrompt, cmp.Or(q.Said, q.Text))
		}
		s.Queued, s.BusyQueued = nil, false
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
			s.finish(e)
		}
	case *events.ModelCalled:
		if !e.InTurn() { // the harness's own call: its cost counts, its text is no reply
			break
		}
		if e.RunID == s.OpenRun && e.Step > s.Step {
			s.Step = e.Step
		}
		if e.Stopped && e.Text != "" { // what the owner saw stream before the stop stays
			s.Messages = append(s.Messages, Message{Role: RoleAssistant, Text: e.Text, Stopped: true})
		}
		if e.Error == "" {
			s.Messages = append(s.Messages, Message{Role: RoleAssistant, Text: e.Text, ToolCalls: e.ToolCalls})
		}
	case *events.GuardReminded:
		s.Messages = append(s.Messages, Message{Role: RoleUser, Text: e.Text})
	case *events.ToolCalled:
		if s.Calling == nil {
			s.Calling = map[string]bool{}
		}
		s.Calling[e.CallID] = true
	case *events.ToolCompleted:
		delete(s.Calling, e.CallID)
		m := Message{Role: RoleTool, Text: e.Output, ToolCallID: e.CallID, Tool: e.Tool, IsError: e.IsError, Delegate: e.Delegate, Outcome: e.Outcome, Parts: e.Parts, CanvasRef: e.Canvas, Spill: e.SpillPath}
		if len(e.Meta) > 0 {
			m.Meta, _ = json.Marshal(e.Meta)
		}
		s.Messages = append(s.Messages, m)
	}
}

// external remembers the event that stored a channel's message id.
func (s *State) external(id, event string) {
	if id == "" {
		return
	}
	if s.External == nil {
		s.External = map[string]string{}
	}
	s.External[id] = event
}

// drop moves the waiting messages a stop dropped to the chat's dropped
// list.
func (s *State) drop(ids []string) {
	if len(ids) == 0 {
		return
	}
	drop := map[string]bool{}
	for _, id := range ids {
		drop[id] = true
	}
	keep := func(ps []Pending) []Pending {
		kept := ps[:0]
		for _, p := range ps {
			if drop[p.EventID] {
				s.Dropped = append(s.Dropped, p)
			} else {
				kept = append(kept, p)
			}
		}
		return kept
	}
	s.Queued = keep(s.Queued)
	s.Steers = keep(s.Steers)
	if len(s.Queued) == 0 {
		s.BusyQueued = false
	}
}

// finish closes the open run: a prompt a hook blocked withheld, the
// notices and the steers that never reached a tool boundary kept.
func (s *State) finish(e *events.RunFinished) {
	if e.Status == events.RunHalted && e.Reason == "hook" && s.Step == 0 {
		// UserPromptSubmit blocked the run's opening words: they
		// never reach a model, now or in a later turn.
		for i := s.RunFrom; i < len(s.Messages); i++ {
			if s.Messages[i].Role == RoleUser {
				s.Messages[i] = withheld(s.Messages[i])
			}
		}
	}
	s.OpenRun, s.Step, s.Calling = "", 0, nil
	s.Messages, s.Notices = append(s.Messages, s.Notices...), nil
	// Steers that never reached a tool boundary (the run ended first) are
	// not lost: they wait as messages for the next turn, in the order they
	// were stored among the messages queued meanwhile — their turn notes
	// tell what changed since the one stored before, so the model must
	// read them in that order.
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
}

// withCanvas adds a message's canvas notes to its pending entry.
func withCanvas(p Pending, n *events.CanvasNotes) Pending {
	if n != nil {
		p.Canvas = n.Text
	}
	return p
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
	return loadState(ctx, log, snaps, conversation, nil)
}

// loadState is LoadState saying on logger (when set) that it discarded a
// snapshot it could not read.
func loadState(ctx context.Context, log Reader, snaps Snapshots, conversation string, logger *slog.Logger) (*State, error) {
	st := &State{Conversation: conversation}
	rebuilt := false
	if snaps != nil {
		data, err := snaps.LoadSnapshot(conversation)
		if err != nil {
			return nil, fmt.Errorf("load state of %s: %w", conversation, err)
		}
		if data != nil {
			if err := decodeSnapshot(data, st); err != nil {
				// A snapshot is a cache: an unreadable one (an older
				// version's shape, or damaged) is replaced by a cold
				// replay, never trusted nor read in part.
				st, rebuilt = &State{Conversation: conversation}, true
				if logger != nil {
					logger.Info("snapshot discarded: the state is rebuilt from the log", "conversation", conversation, "error", err.Error())
				}
			}
		}
	}
	applied, err := st.CatchUp(ctx, log)
	if err != nil {
		return nil, err
	}
	if snaps != nil && (applied >= SnapshotEvery || rebuilt && applied > 0) {
		if err := SaveSnapshot(snaps, st); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// CatchUp applies every event stored after s.Seq and returns how many.
// It reads on from s.Seq without asking for the conversation's last
// sequence first (see events.Log.Read).
func (s *State) CatchUp(ctx context.Context, log Reader) (int, error) {
	filter := events.Conv(s.Conversation).Filter()
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
// then discarded (rebuilt from the log, saying so) rather than misread:
// gob matches fields by name, so an older shape would decode in part.
// 26: the state as folds (embedded feature structs).
const snapshotVersion byte = 26

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
		return fmt.Errorf("snapshot version %v, this build reads %d", data[:min(1, len(data))], snapshotVersion)
	}
	return gob.NewDecoder(bytes.NewReader(data[1:])).Decode(st)
}
