package loop

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/kit"
	"github.com/my-agent-crew/crew/tools/shell"
)

// Limits (R-HOME-6).
const (
	MaxCallsPerReply = 8
)

// Agent is what a turn needs of an agent's configuration. The keys of
// agent.yaml it reads carry their yaml names: cmd/crew/home's Agent
// inlines it, so a new key the loop reads is a field here and a property
// of schemas/agent.schema.json. The fields tagged "-" are set where the
// agent is loaded (its id, folders and approval lifetimes) or run
// (Persona).
type Agent struct {
	ID              string   `yaml:"-"`
	Dir             string   `yaml:"-"` // the agent's folder: AGENTS.md, SOUL.md
	Workspace       string   `yaml:"-"`
	Routes          []string `yaml:"routes"`
	EscalationRoute string   `yaml:"escalation_route"`
	// VisionRoutes can see images: image_read uses them, and a turn on
	// one of them gets attachments as images.
	VisionRoutes []string `yaml:"vision_routes"`
	Tools        []string `yaml:"tools"` // registry tools the agent may use
	MCP          []string `yaml:"mcp"`   // the MCP servers whose tools it may find (tool_search)
	// ScriptCalls "gated" lets tool_script call tools that change things,
	// each through the gate; otherwise scripts call read-only tools only.
	ScriptCalls     string        `yaml:"script_calls"`
	Autonomous      bool          `yaml:"autonomous"`
	MaxSteps        int           `yaml:"max_steps"`
	CostCapUSD      float64       `yaml:"cost_cap_usd"`
	ToolOutputChars int           `yaml:"tool_output_chars"`
	ApprovalTTL     time.Duration `yaml:"-"`
	// TelegramApprovalTTL, when set, is the approval lifetime on a
	// Telegram chat (ChannelApprovalTTL).
	TelegramApprovalTTL time.Duration     `yaml:"-"`
	Policy              tools.AgentPolicy `yaml:",inline"`
	// Delegates are the agents this one may delegate to; empty: any other.
	Delegates []string `yaml:"delegates"`
	// Name and Description are how the crew's roster shows the agent.
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Persona, when set, is the whole persona instead of the folder's
	// AGENTS.md, SOUL.md and MEMORY.md: a kit sub-agent (.agents/agents/*.md)
	// is a role with a prompt and no memory of its own.
	Persona string `yaml:"-"`
}

// Deps are the turn's edges, each a named seam: the models, the tools,
// the crew, the clock, the home, the live feed and the crew's services.
// Replay swaps Models, Tools, Clock and the MCP servers for recorded ones.
// The worker running a turn lends it what delegation needs (its
// conversations and its passes); a turn made by NewTurn alone refuses
// to delegate.
type Deps struct {
	// Models hands out the model of a route: the home's providers behind
	// the budget ledger (R-X-5).
	Models llm.Models
	Tools  *tools.Registry
	// Crew is the crew: the delegates, the roster for the system prompt
	// (asked at every step, so a reloaded crew shows from the next step
	// on) and what each route's model can do; nil: no delegation, no
	// roster, the built-in model specs.
	Crew Crew
	// Clock is the time, the owner's zone, fresh ids and retry waits;
	// nil: WallClock in UTC.
	Clock Clock
	// HomeDir is the home: users/owner/ for the system prompt, the kit's
	// hooks and skills, and spill/ when Services.Spills is nil (where the
	// text a tool_completed does not store, over MaxStoredOutput, is
	// kept); "": none of these.
	HomeDir string
	// Live receives text and tool-call argument deltas while the model
	// writes (lossy: for display only, never stored).
	Live func(conversation, runID string, d llm.Delta)
	// Services are the crew's long-lived services a turn reaches.
	Services Services
}

// Services are the crew's long-lived services that turns and their tools
// reach; each nil: what needs it is refused, the rest runs.
type Services struct {
	// MCP is the crew's MCP servers (R-MCP).
	MCP MCP
	// Teams seats a conversation on its team (R-TEAM).
	Teams Teams
	// Background runs shell_run's background commands (the registry's
	// shell_run and task_stop hold it too); the worker stops a run's
	// tasks with it.
	Background *Background
	// Sandbox starts every child process of a turn (hooks, tool_script);
	// nil: none starts.
	Sandbox *shell.Sandbox
	// Scripts keeps tool_script's stores (store.get/set); nil: a script's
	// store lives for that script only.
	Scripts ScriptStore
	// Spills keep cut outputs and result images (tools.Spill); nil: files
	// under the home's spill/, none without a home.
	Spills tools.Spills
}

// Turn runs one pass of the loop on a conversation: it starts a run for
// queued messages or resumes the open one, and returns when the run
// finishes or pauses on an approval or a question. Everything it decides is appended
// through conv before it takes effect.
type Turn struct {
	agent Agent
	deps  Deps
	conv  *Conv
	// worker is the worker running this pass: a delegate's child
	// conversation opens through its Convs and runs on a pass it kicks;
	// nil (a turn made by NewTurn alone, a replay): no delegation.
	worker *Worker
	// seat is the conversation's place on a team; seated says it has one.
	seat   Seat
	seated bool

	// escalated: this pass calls the escalation route. Whether the run may
	// still escalate is folded (State.Escalated); a pass resumed after an
	// approval or a restart starts on the agent's routes again (R-LOOP-4).
	escalated bool

	hooksRead    bool
	promptHooked bool
	hk           *kit.Hooks
	hkErr        error
	// sentSystem is the system prompt this pass last recorded on a
	// model_called (events.ModelCalled.System).
	sentSystem string
	// replayed pins what a replayed run's steps sent (nil: a live turn).
	replayed *pins
	// measured are the declarations this pass last measured, and their
	// size (llm.ToolsBytes): the same declarations are not measured again.
	measured      []llm.Tool
	measuredBytes int
	// prompt is the system prompt this pass last assembled and what it
	// was assembled from: while its files stay unchanged, a step stats
	// them instead of reading them again.
	prompt promptMemo
	// stampBuf is the spare buffer of systemPrompt's stamps.
	stampBuf []byte
}

// NewTurn prepares a pass over conv for agent.
func NewTurn(agent Agent, deps Deps, conv *Conv) *Turn {
	conv.View(func(st *State) {
		if st.Route != "" { // a fork runs on its route (R-X-2)
			agent.Routes = []string{st.Route}
		}
	})
	if deps.Clock == nil {
		deps.Clock = WallClock{}
	}
	t := &Turn{agent: agent, deps: deps, conv: conv}
	if deps.Services.Teams != nil {
		conv.View(func(st *State) { t.seat = seatOf(st) })
		t.agent, t.seated = deps.Services.Teams.Seated(agent, t.seat)
	}
	return t
}

// snapshotOf copies what the turn reads of the state.
type snapshotOf struct {
	openRun  string
	step     int
	queued   int
	busy     bool
	messages []Message
	steers   []Pending
	cost     float64
	budget   float64                  // the cost cap in force; 0: none
	child    bool                     // a delegated conversation: it may not delegate again
	parent   string                   // the conversation that delegated this one
	calls    []events.ToolCallRequest // all calls of the last reply
	answered map[string]bool
	calling  map[string]bool
	approval map[string]Approval
	question map[string]Question
	auto     []string
	auton    bool
	ttl      int
	pending  *Approval
	guard    Guard // the loop guard after the last reply
	escal    bool  // the run has escalated already
	comp     Compaction
	ratio    map[string]float64 // State.TokenRatio
	// canvasChannel is the channel the canvas rules go by (the root's for
	// a delegated conversation).
	canvasChannel string
	runFrom       int // index in messages of the open run's first message
	pin           *SystemPin
}

func (t *Turn) read() snapshotOf {
	var s snapshotOf
	t.conv.View(func(st *State) {
		s.openRun, s.step, s.queued, s.busy = st.OpenRun, st.Step, len(st.Queued), st.BusyQueued
		s.messages = append([]Message(nil), st.Messages...)
		s.comp = st.Compaction.clone()
		s.ratio = maps.Clone(st.TokenRatio)
		s.steers = append([]Pending(nil), st.Steers...)
		s.cost, s.budget = st.CostUSD, st.Budget(t.agent.CostCapUSD)
		s.child, s.parent = st.RootID != "", st.ParentConversation
		s.calls, s.answered = st.ReplyCalls()
		s.calling = map[string]bool{}
		for k := range st.Calling {
			s.calling[k] = true
		}
		s.approval = map[string]Approval{}
		for k, a := range st.Approvals {
			s.approval[k] = *a
		}
		s.question = map[string]Question{}
		for k, q := range st.Questions {
			s.question[k] = *q
		}
		s.guard, s.escal = st.Guard, st.Escalated
		s.canvasChannel, s.runFrom = st.CanvasChannel(), st.RunFrom
		s.auto = append([]string(nil), st.AutoApprove...)
		s.auton, s.ttl = st.Autonomous, st.ApprovalTTL
		s.pin = st.Pin
		if p := st.PendingApproval(); p != nil {
			cp := *p
			s.pending = &cp
		}
	})
	return s
}

// emit appends events that do not depend on a re-check of the state.
func (t *Turn) emit(ctx context.Context, evs ...events.Event) error {
	_, err := t.conv.Append(ctx, func(*State) ([]events.Event, error) { return evs, nil })
	return err
}

// emitDeferred is emit for an event that is one decision with the durable
// append that follows it in the pass (ADR 0008): a model's reply with the
// start of its calls or with the run's end, a tool's result with the next
// call's reservation. It is stored at once and fsynced with that next
// append; a power cut between them loses it, and recovery answers as if
// it had not come yet (the reservation settled at its worst case, the
// call closed as interrupted).
func (t *Turn) emitDeferred(ctx context.Context, evs ...events.Event) error {
	return t.emit(events.Deferred(ctx), evs...)
}

// Run is one pass. It returns nil when the run finished or paused; what
// the pass deferred is durable when it returns.
func (t *Turn) Run(ctx context.Context) (err error) {
	defer func() { // a pass that panics leaves nothing deferred unsynced either
		if serr := t.conv.Sync(context.WithoutCancel(ctx)); err == nil && serr != nil {
			err = fmt.Errorf("conversation %s: %w", t.conv.ID(), serr)
		}
	}()
	return t.pass(ctx)
}

func (t *Turn) pass(ctx context.Context) error {
	s := t.read()
	if s.openRun == "" {
		if s.queued == 0 {
			return nil
		}
		trigger := "message"
		if s.busy {
			trigger = "queue"
		}
		runID := t.deps.Clock.NewID()
		_, err := t.conv.Append(ctx, func(st *State) ([]events.Event, error) {
			if st.OpenRun != "" || len(st.Queued) == 0 {
				return nil, nil // someone else started it
			}
			switch {
			case !slices.ContainsFunc(st.Queued, func(p Pending) bool { return !p.Team && !p.Task }) &&
				slices.ContainsFunc(st.Queued, func(p Pending) bool { return p.Team }):
				trigger = "team" // started by the team runtime's delivery, not the owner
			case !slices.ContainsFunc(st.Queued, func(p Pending) bool { return !p.Task }):
				trigger = "task_notification" // a background command ended
			}
			return []events.Event{delegated(st, &events.RunStarted{RunID: runID, Agent: t.agent.ID, Trigger: trigger})}, nil
		})
		if err != nil {
			return err
		}
	}
	// The owner's stop first: nothing of the run goes on, after a crash
	// either.
	if done, err := t.closeStopped(ctx); err != nil || done {
		return err
	}
	if done, err := t.finishDecided(ctx); err != nil || done { // a crash came between the run's last word and its close
		return err
	}
	// UserPromptSubmit: before the run's first model call, also when a
	// crash came between the run's start and its hooks (a delegated brief
	// is an agent's words, not the owner's: no hook).
	if halted, err := t.promptHook(ctx); err != nil || halted {
		return err
	}
	for {
		s = t.read()
		if s.openRun == "" {
			return nil
		}
		// Between steps and after every call: a stop stored meanwhile.
		if done, err := t.closeStopped(ctx); err != nil || done {
			return err
		}
		// Decide on the last reply's calls, then settle them (a resume
		// lands here too, and decides as the uninterrupted turn did: the
		// guard and the escalation are folded from the log).
		if done, err := t.judge(ctx, s); err != nil || done {
			return err
		}
		paused, done, err := t.settle(ctx, t.read())
		if err != nil || paused || done {
			return err
		}
		if err := t.remind(ctx); err != nil {
			return err
		}
		s = t.read()
		if s.step >= t.agent.MaxSteps {
			return t.finish(ctx, s.openRun, events.RunHalted, "max_steps", "")
		}
		// Tool boundary: pending steers enter the history as user words
		// (team mail too, framed as team events).
		if len(s.steers) > 0 {
			ids := make([]string, len(s.steers))
			words := make([]string, len(s.steers))
			for i, p := range s.steers {
				ids[i], words[i] = p.EventID, cmp.Or(p.Said, p.Text)
			}
			reason, blocked, err := t.hook(ctx, s.openRun, s.step, kit.UserPromptSubmit, nil, map[string]any{"prompt": strings.Join(words, "\n\n")})
			if err != nil {
				return err
			}
			if err := t.emit(ctx, &events.SteersApplied{RunID: s.openRun, Step: s.step, SteerIDs: ids, Withheld: blocked}); err != nil {
				return err
			}
			if blocked {
				return t.finish(ctx, s.openRun, events.RunHalted, "steer_hook", reason)
			}
			s = t.read()
		}
		// Step boundary: a teammate asked to shut down stops here, before
		// another model call, its mail read into the history first (seed
		// 001 §11).
		if t.seated && t.seat.Member != "" {
			if why := t.deps.Services.Teams.Stop(t.seat); why != "" {
				return t.finish(ctx, s.openRun, events.RunHalted, "shutdown", why)
			}
		}
		if s.budget > 0 && s.cost >= s.budget {
			return t.finish(ctx, s.openRun, events.RunHalted, "cost_cap", "")
		}
		if done, err := t.closeStopped(ctx); err != nil || done { // never a model call after a stop
			return err
		}
		if err := t.step(ctx, s); err != nil {
			return err
		}
	}
}

// step makes one model call. A reply without tool calls ends the run; what
// happens to the calls of one that has them is decided by judge and settle
// on the next round.
func (t *Turn) step(ctx context.Context, s snapshotOf) error {
	reply, err := t.callModel(ctx, s, s.step+1)
	if err != nil {
		return err
	}
	if reply == nil { // the call failed and was recorded; the loop goes on or the run ended
		return nil
	}
	if len(reply.ToolCalls) == 0 {
		return t.finish(ctx, s.openRun, events.RunDone, "", "")
	}
	return nil
}

// judge decides what may not run of the last reply's calls, from the
// state alone: out of steps (R-LOOP-2) or a loop (R-LOOP-3), the calls not
// yet answered are refused and the run halts — or, with an escalation
// route, moves to it (R-LOOP-4). done: the run finished.
func (t *Turn) judge(ctx context.Context, s snapshotOf) (done bool, err error) {
	var open []events.ToolCallRequest
	for _, c := range s.calls {
		if !s.answered[c.ID] {
			open = append(open, c)
		}
	}
	step := s.step
	if step >= t.agent.MaxSteps && len(open) > 0 {
		// The last allowed call still asked for tools: none run, each gets
		// a result, the turn halts.
		msg := fmt.Sprintf("Not run: this turn ran out of steps (max_steps %d). Nothing was run and nothing changed.", t.agent.MaxSteps)
		if err := t.refuseAll(ctx, s.openRun, step, open, msg, "max_steps"); err != nil {
			return false, err
		}
		return true, t.finish(ctx, s.openRun, events.RunHalted, "max_steps", "")
	}
	if s.guard.Verdict() != GuardHalt {
		return false, nil
	}
	if t.canEscalate(s, step) {
		msg := "Not run: this call was repeated too many times in a row. The turn moves to another model."
		if err := t.refuseAll(ctx, s.openRun, step, open, msg, "escalated"); err != nil {
			return false, err
		}
		t.escalated = true
		return false, t.emit(ctx, &events.Escalated{RunID: s.openRun, Step: step, Reason: "loop", Route: t.agent.EscalationRoute})
	}
	msg := fmt.Sprintf("Not run: the same call was repeated %d times in a row, so the turn was halted. Nothing was run and nothing changed.", s.guard.Count())
	if err := t.refuseAll(ctx, s.openRun, step, open, msg, "loop"); err != nil {
		return false, err
	}
	return true, t.finish(ctx, s.openRun, events.RunHalted, "loop", "")
}

// remind gives the guard's reminder once the repeated reply's calls have
// their results: a user-role message naming only the tool and the count.
func (t *Turn) remind(ctx context.Context) error {
	s := t.read()
	if s.openRun == "" || s.guard.Verdict() != GuardRemind {
		return nil
	}
	g := s.guard
	return t.emit(ctx, &events.GuardReminded{RunID: s.openRun, Step: s.step, Tool: g.Tools(), Count: g.Count(), Text: g.Reminder()})
}

func (t *Turn) canEscalate(s snapshotOf, step int) bool {
	return t.agent.EscalationRoute != "" && !s.escal && step < t.agent.MaxSteps &&
		(s.budget <= 0 || s.cost < s.budget)
}

func (t *Turn) finish(ctx context.Context, runID, status, reason, errText string) error {
	stored, err := t.conv.Append(ctx, func(st *State) ([]events.Event, error) {
		if st.OpenRun != runID {
			return nil, nil
		}
		return []events.Event{&events.RunFinished{RunID: runID, Status: status, Reason: reason, Error: errText}}, nil
	})
	if err != nil || len(stored) == 0 {
		return err
	}
	_, _, err = t.hook(ctx, runID, 0, kit.Stop, nil, map[string]any{"status": status, "reason": reason})
	return err
}

func (t *Turn) refuseAll(ctx context.Context, runID string, step int, calls []events.ToolCallRequest, msg, outcome string) error {
	evs := make([]events.Event, 0, len(calls))
	for _, c := range calls {
		evs = append(evs, &events.ToolCompleted{RunID: runID, Step: step, CallID: c.ID, Tool: c.Name, Output: msg, IsError: true, Outcome: outcome})
	}
	return t.emit(ctx, evs...)
}
