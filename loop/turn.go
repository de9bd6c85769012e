package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/kit"
	"github.com/tmc/langchaingo/llms"
)

// Limits (R-HOME-6).
const (
	MaxCallsPerReply = 8
)

// Agent is what a turn needs of an agent's configuration.
type Agent struct {
	ID              string
	Dir             string // the agent's folder: AGENTS.md, SOUL.md
	Workspace       string
	Routes          []string
	EscalationRoute string
	Tools           []string // registry tools the agent may use
	Autonomous      bool
	MaxSteps        int
	CostCapUSD      float64
	ToolOutputChars int
	ApprovalTTL     time.Duration
	Policy          tools.AgentPolicy
	// Delegates are the agents this one may delegate to; empty: any other.
	Delegates []string
	// Name and Description are how the crew's roster shows the agent.
	Name, Description string
	// Persona, when set, is the whole persona instead of the folder's
	// AGENTS.md, SOUL.md and MEMORY.md: a kit sub-agent (.agents/agents/*.md)
	// is a role with a prompt and no memory of its own.
	Persona string
}

// Deps are the turn's edges: models, tools, time and the live feed. Replay
// swaps Models and Tools for recorded ones.
type Deps struct {
	Models   func(route string) (llms.Model, error)
	Tools    *tools.Registry
	Clock    func() time.Time
	Location *time.Location
	SpillDir string // <home>/spill
	HomeDir  string // the home: users/owner/ for the system prompt
	// Roster is the crew, one line per agent, for the system prompt; asked
	// at every step, so a reloaded crew shows from the next step on.
	Roster func() string
	NewID  func() string
	// Live receives text and tool-call argument deltas while the model
	// writes (lossy: for display only, never stored).
	Live func(conversation, runID string, d llm.Delta)
	// Sleep waits between 429 retries (tests make it instant).
	Sleep func(ctx context.Context, d time.Duration) error
	// Delegation (R-DEL): Convs opens and follows the child conversation,
	// Agents finds the delegate, Kick has the worker run the child. The
	// worker fills in what is unset; without them delegate is refused.
	Convs  *Convs
	Agents func(id string) (Agent, bool)
	Kick   func(conversation string)
	// Delegated, when set, answers delegate calls from a recording instead
	// of running a child (crew replay).
	Delegated func(callID string) (*events.ToolCompleted, bool)
}

// Turn runs one pass of the loop on a conversation: it starts a run for
// queued messages or resumes the open one, and returns when the run
// finishes or pauses on an approval. Everything it decides is appended
// through conv before it takes effect.
type Turn struct {
	agent Agent
	deps  Deps
	conv  *Conv

	guard     Guard
	escalated bool

	hooksRead    bool
	promptHooked bool
	hk           *kit.Hooks
	hkErr        error
}

// NewTurn prepares a pass over conv for agent.
func NewTurn(agent Agent, deps Deps, conv *Conv) *Turn {
	return &Turn{agent: agent, deps: deps, conv: conv}
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
	calls    []events.ToolCallRequest // all calls of the last reply
	answered map[string]bool
	calling  map[string]bool
	approval map[string]Approval
	auto     []string
	auton    bool
	ttl      int
	pending  *Approval
}

func (t *Turn) read() snapshotOf {
	var s snapshotOf
	t.conv.View(func(st *State) {
		s.openRun, s.step, s.queued, s.busy = st.OpenRun, st.Step, len(st.Queued), st.BusyQueued
		s.messages = append([]Message(nil), st.Messages...)
		s.steers = append([]Pending(nil), st.Steers...)
		s.cost, s.budget = st.CostUSD, st.Budget(t.agent.CostCapUSD)
		s.child = st.RootID != ""
		s.calls, s.answered = st.ReplyCalls()
		s.calling = map[string]bool{}
		for k := range st.Calling {
			s.calling[k] = true
		}
		s.approval = map[string]Approval{}
		for k, a := range st.Approvals {
			s.approval[k] = *a
		}
		s.auto = append([]string(nil), st.AutoApprove...)
		s.auton, s.ttl = st.Autonomous, st.ApprovalTTL
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

// Run is one pass. It returns nil when the run finished or paused.
func (t *Turn) Run(ctx context.Context) error {
	s := t.read()
	if s.openRun == "" {
		if s.queued == 0 {
			return nil
		}
		trigger := "message"
		if s.busy {
			trigger = "queue"
		}
		runID := t.deps.NewID()
		_, err := t.conv.Append(ctx, func(st *State) ([]events.Event, error) {
			if st.OpenRun != "" || len(st.Queued) == 0 {
				return nil, nil // someone else started it
			}
			return []events.Event{delegated(st, &events.RunStarted{RunID: runID, Agent: t.agent.ID, Trigger: trigger})}, nil
		})
		if err != nil {
			return err
		}
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
		// Settle the last reply's tool calls (a resume lands here too).
		paused, done, err := t.settle(ctx, s)
		if err != nil || paused || done {
			return err
		}
		s = t.read()
		if s.step >= t.agent.MaxSteps {
			return t.finish(ctx, s.openRun, events.RunHalted, "max_steps", "")
		}
		// Tool boundary: pending steers enter the history as user words.
		if len(s.steers) > 0 {
			ids := make([]string, len(s.steers))
			words := make([]string, len(s.steers))
			for i, p := range s.steers {
				ids[i], words[i] = p.EventID, orText(p.Said, p.Text)
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
			t.guard.Reset()
			s = t.read()
		}
		if s.budget > 0 && s.cost >= s.budget {
			return t.finish(ctx, s.openRun, events.RunHalted, "cost_cap", "")
		}
		if err := t.step(ctx, s); err != nil {
			return err
		}
	}
}

// step makes one model call and acts on its reply.
func (t *Turn) step(ctx context.Context, s snapshotOf) error {
	step := s.step + 1
	reply, err := t.callModel(ctx, s, step)
	if err != nil {
		return err
	}
	if reply == nil { // the call failed and was recorded; the loop goes on or the run ended
		return nil
	}
	calls := reply.ToolCalls
	if len(calls) == 0 {
		return t.finish(ctx, s.openRun, events.RunDone, "", "")
	}
	if step >= t.agent.MaxSteps {
		// R-LOOP-2: the last allowed call still asked for tools: none run,
		// each gets a result, the turn halts.
		msg := fmt.Sprintf("Not run: this turn ran out of steps (max_steps %d). Nothing was run and nothing changed.", t.agent.MaxSteps)
		if err := t.refuseAll(ctx, s.openRun, step, calls, msg, "max_steps"); err != nil {
			return err
		}
		return t.finish(ctx, s.openRun, events.RunHalted, "max_steps", "")
	}
	switch t.guard.Observe(calls) {
	case GuardHalt:
		if t.canEscalate(s, step) {
			msg := "Not run: this call was repeated too many times in a row. The turn moves to another model."
			if err := t.refuseAll(ctx, s.openRun, step, calls, msg, "escalated"); err != nil {
				return err
			}
			t.escalated = true
			t.guard.Reset()
			return t.emit(ctx, &events.Escalated{RunID: s.openRun, Step: step, Reason: "loop", Route: t.agent.EscalationRoute})
		}
		msg := fmt.Sprintf("Not run: the same call was repeated %d times in a row, so the turn was halted. Nothing was run and nothing changed.", t.guard.Count())
		if err := t.refuseAll(ctx, s.openRun, step, calls, msg, "loop"); err != nil {
			return err
		}
		return t.finish(ctx, s.openRun, events.RunHalted, "loop", "")
	case GuardRemind:
		// The calls run; the reminder follows their results.
		paused, done, err := t.settle(ctx, t.read())
		if err != nil || paused || done {
			return err
		}
		return t.emit(ctx, &events.GuardReminded{RunID: s.openRun, Step: step, Tool: t.guard.Tools(), Count: t.guard.Count(), Text: t.guard.Reminder()})
	}
	return nil
}

func (t *Turn) canEscalate(s snapshotOf, step int) bool {
	return t.agent.EscalationRoute != "" && !t.escalated && step < t.agent.MaxSteps &&
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

// Result texts the harness gives instead of a tool's own.
const (
	deniedText      = "DENIED_TOOL: the owner denied this call. It was not run and nothing changed. Decide what to do next without it."
	expiredText     = "DENIED_TOOL: nobody approved this call before its approval expired, so it was not run and nothing changed. Do not redo it, or its equivalent, with another tool."
	interruptedText = "Interrupted: the server stopped while this call was running. It may or may not have run; check its effect before repeating it."
	tooManyText     = "Not run: at most 8 tool calls run per model reply. Ask for the rest in your next reply."
	askUserText     = "Your question was shown to the owner. Their answer will come as their next message; end your reply here."
	noteText        = "Noted."
)

// settle answers the unanswered tool calls of the last reply, in the order
// written: decided approvals run or are denied, interrupted calls are
// closed, the rest go through the gate. paused: an approval is pending.
// done: the run finished (ask_user ends the turn).
func (t *Turn) settle(ctx context.Context, s snapshotOf) (paused, done bool, err error) {
	// ask_user ends the turn once the reply's calls are settled, even when
	// a gated call in the same reply paused in between.
	asked := false
	for _, c := range s.calls {
		asked = asked || c.Name == "ask_user"
	}
	unanswered := 0
	for i, c := range s.calls {
		if s.answered[c.ID] {
			continue
		}
		unanswered++
		if err := ctx.Err(); err != nil {
			return false, false, err
		}
		step := s.step
		// A delegate call waits for its child, also when it was recorded
		// before a restart: the child carries on, nothing runs twice.
		if c.Name == DelegateTool && i < MaxCallsPerReply {
			if err := t.delegate(ctx, s, step, c); err != nil {
				return false, false, err
			}
			continue
		}
		// A call recorded as started and never finished may or may not
		// have run: close it, approved or not — never run it twice.
		if s.calling[c.ID] {
			if err := t.result(ctx, s.openRun, step, c, interruptedText, true, "interrupted"); err != nil {
				return false, false, err
			}
			continue
		}
		if a, ok := s.approval[c.ID]; ok {
			switch a.Decision {
			case "":
				return true, false, nil
			case events.DecisionApproved:
				if err := t.execute(ctx, s.openRun, step, c); err != nil {
					return false, false, err
				}
			case events.DecisionDenied:
				if err := t.result(ctx, s.openRun, step, c, deniedText, true, "denied"); err != nil {
					return false, false, err
				}
			case events.DecisionExpired:
				if err := t.result(ctx, s.openRun, step, c, expiredText, true, "expired"); err != nil {
					return false, false, err
				}
			}
			continue
		}
		// i is the call's place in the reply, so the cap holds across a
		// pause for approval or a restart.
		if i >= MaxCallsPerReply {
			if err := t.result(ctx, s.openRun, step, c, tooManyText, true, "blocked"); err != nil {
				return false, false, err
			}
			continue
		}
		switch c.Name {
		case "ask_user":
			asked = true
			if err := t.result(ctx, s.openRun, step, c, askUserText, false, ""); err != nil {
				return false, false, err
			}
			continue
		case "progress_note":
			if err := t.result(ctx, s.openRun, step, c, noteText, false, ""); err != nil {
				return false, false, err
			}
			continue
		}
		tool, ok := t.lookup(c.Name)
		if !ok {
			if err := t.result(ctx, s.openRun, step, c, fmt.Sprintf("Unknown tool %q: it is not one of your tools.", c.Name), true, "blocked"); err != nil {
				return false, false, err
			}
			continue
		}
		verdict, reason := Gate(tool, t.toolEnv(), c.Arguments, s.auton || t.agent.Autonomous, s.auto)
		if verdict == Ask {
			ttl := t.agent.ApprovalTTL
			if s.ttl > 0 {
				ttl = time.Duration(s.ttl) * time.Second
			}
			return true, false, t.emit(ctx, &events.ApprovalRequested{
				ApprovalID: t.deps.NewID(), RunID: s.openRun, Step: step, CallID: c.ID, Tool: c.Name,
				Arguments: c.Arguments, Reason: reason, ExpiresAt: t.deps.Clock().Add(ttl).UTC(),
			})
		}
		if err := t.execute(ctx, s.openRun, step, c); err != nil {
			return false, false, err
		}
	}
	if asked && unanswered > 0 {
		return false, true, t.finish(ctx, s.openRun, events.RunDone, "ask_user", "")
	}
	return false, false, nil
}

func (t *Turn) lookup(name string) (tools.Tool, bool) {
	if !contains(t.agent.Tools, name) || t.deps.Tools == nil {
		return nil, false
	}
	return t.deps.Tools.Lookup(name)
}

func (t *Turn) toolEnv() tools.Env {
	return tools.Env{
		Workspace:    t.agent.Workspace,
		AgentID:      t.agent.ID,
		Conversation: t.conv.ID(),
		SpillDir:     spillDir(t.deps.SpillDir, t.conv.ID()),
		Agent:        t.agent.Policy,
		Clock:        t.deps.Clock,
		AgentDir:     t.agent.Dir,
		HomeDir:      t.deps.HomeDir,
		Location:     t.deps.Location,
	}
}

func spillDir(root, conv string) string {
	if root == "" {
		return ""
	}
	return root + "/" + conv
}

// execute records the call, runs the tool, cuts its output and records the
// result. A crash between the two records leaves the call "calling": the
// next pass closes it as interrupted, never re-runs it.
func (t *Turn) execute(ctx context.Context, runID string, step int, c events.ToolCallRequest) error {
	tool, ok := t.lookup(c.Name)
	if !ok {
		return t.result(ctx, runID, step, c, fmt.Sprintf("Unknown tool %q: it is not one of your tools.", c.Name), true, "blocked")
	}
	if reason, blocked, err := t.hook(ctx, runID, step, kit.PreToolUse, &c, map[string]any{"tool_input": rawArgs(c.Arguments)}); err != nil {
		return err
	} else if blocked {
		return t.result(ctx, runID, step, c, "Blocked by the owner's PreToolUse hook, so it was not run and nothing changed: "+reason, true, "blocked")
	}
	if err := t.emit(ctx, &events.ToolCalled{RunID: runID, Step: step, CallID: c.ID, Tool: c.Name, Arguments: c.Arguments}); err != nil {
		return err
	}
	start := t.deps.Clock()
	res, err := tool.Run(ctx, t.toolEnv(), c.Arguments)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // stopping: the next start closes the call as interrupted
		}
		res = tools.Result{Output: "The harness failed to run this tool: " + err.Error(), IsError: true}
	}
	// Redacted (R-X-6) and unframed (R-SEC-1: a tool cannot write the
	// hook's frame below) before it is cut, so what the model is shown,
	// the spill and the offsets into it agree.
	full := Unframe(events.Secrets().String(res.Output))
	shown, truncated := full, false
	if c.Name != "tool_output_read" { // it pages through a spill already
		shown, truncated = tools.Truncate(full, t.agent.ToolOutputChars)
	}
	var spill string
	if truncated {
		if spill, err = tools.Spill(t.toolEnv(), c.ID, full); err != nil {
			shown += "\n(The full output could not be kept: " + err.Error() + ")"
			spill = ""
		}
	}
	// PostToolUse hooks run under their own timeouts; a shutdown cuts
	// them, never the result below.
	if feedback, _, err := t.hook(ctx, runID, step, kit.PostToolUse, &c, map[string]any{
		"tool_input": rawArgs(c.Arguments), "tool_response": map[string]any{"output": shown, "is_error": res.IsError}}); err == nil && feedback != "" {
		shown += "\n\n[The owner's PostToolUse hook says]\n" + strings.TrimSpace(feedback)
	}
	// The tool ran: its result is recorded even if shutdown began
	// meanwhile, or the next start would have to call it interrupted.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return t.emit(rctx, &events.ToolCompleted{
		RunID: runID, Step: step, CallID: c.ID, Tool: c.Name, Output: shown, IsError: res.IsError,
		Truncated: truncated, SpillPath: spill, DurationMS: t.deps.Clock().Sub(start).Milliseconds(),
	})
}

func (t *Turn) result(ctx context.Context, runID string, step int, c events.ToolCallRequest, text string, isErr bool, outcome string) error {
	return t.emit(ctx, &events.ToolCompleted{RunID: runID, Step: step, CallID: c.ID, Tool: c.Name, Output: text, IsError: isErr, Outcome: outcome})
}

// callModel makes the step's model call over the route chain and records
// it. It returns nil reply (and nil error) when the failure was recorded and
// the loop should go on (escalation) or stop (run finished failed).
func (t *Turn) callModel(ctx context.Context, s snapshotOf, step int) (*events.ModelCalled, error) {
	var roster string
	if t.deps.Roster != nil {
		roster = t.deps.Roster()
	}
	system, err := SystemPrompt(Prompt{AgentDir: t.agent.Dir, Persona: t.agent.Persona, HomeDir: t.deps.HomeDir, Roster: roster,
		Now: t.deps.Clock(), Location: t.deps.Location})
	if err != nil {
		return nil, err
	}
	msgs := toLLM(system, s.messages)
	routes := t.agent.Routes
	if t.escalated {
		routes = []string{t.agent.EscalationRoute}
	}
	if len(routes) == 0 {
		return nil, t.finish(ctx, s.openRun, events.RunFailed, "model_error", errNoRoutes.Error())
	}
	opts := []llms.CallOption{}
	if defs := t.toolDefs(s.child); len(defs) > 0 {
		opts = append(opts, llms.WithTools(defs))
	}
	var lastErr error
	shown := false
	for i, route := range routes {
		model, err := t.deps.Models(route)
		if err == nil {
			start := t.deps.Clock()
			streams := newLiveStreams(func(d llm.Delta) {
				if t.deps.Live != nil {
					t.deps.Live(t.conv.ID(), s.openRun, d)
				}
			})
			live := llm.WithDeltas(func(d llm.Delta) {
				if d.Text != "" {
					shown = true
				}
				streams.send(d)
			})
			var resp *llms.ContentResponse
			callOpts := append(append([]llms.CallOption{}, opts...), live)
			if t.deps.Sleep != nil {
				callOpts = append(callOpts, llm.WithSleep(t.deps.Sleep))
			}
			resp, err = llm.Call(ctx, model, msgs, callOpts...)
			streams.flush()
			if err == nil {
				mc := modelCalled(s.openRun, step, route, resp, t.deps.Clock().Sub(start))
				uniqueCallIDs(mc.ToolCalls, s.messages, step)
				if err := t.emit(ctx, mc); err != nil {
					return nil, err
				}
				return mc, nil
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		lastErr = err
		if i+1 < len(routes) {
			if err := t.emit(ctx, &events.RouteFallback{RunID: s.openRun, Step: step, From: route, To: routes[i+1], Error: oneLine(err)}); err != nil {
				return nil, err
			}
		}
	}
	failed := &events.ModelCalled{RunID: s.openRun, Step: step, Route: routes[len(routes)-1], Model: modelOf(routes[len(routes)-1]), Error: oneLine(lastErr)}
	if err := t.emit(ctx, failed); err != nil {
		return nil, err
	}
	if !shown && t.canEscalate(s, step) {
		t.escalated = true
		return nil, t.emit(ctx, &events.Escalated{RunID: s.openRun, Step: step, Reason: "error", Route: t.agent.EscalationRoute, Error: oneLine(lastErr)})
	}
	return nil, t.finish(ctx, s.openRun, events.RunFailed, "model_error", oneLine(lastErr))
}

// toolDefs declares the agent's tools to the model; a delegated child is
// not offered delegate (one level deep).
func (t *Turn) toolDefs(child bool) []llms.Tool {
	var out []llms.Tool
	if t.deps.Tools != nil {
		for _, d := range t.deps.Tools.Defs(t.agent.Tools) {
			out = append(out, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: d.Name, Description: d.Description, Parameters: d.Params}})
		}
	}
	for _, d := range loopTools {
		if contains(t.agent.Tools, d.Name) && !(child && d.Name == DelegateTool) {
			out = append(out, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: d.Name, Description: d.Description, Parameters: d.Params}})
		}
	}
	return out
}

// IsLoopTool reports whether name is answered by the loop itself.
func IsLoopTool(name string) bool {
	for _, d := range loopTools {
		if d.Name == name {
			return true
		}
	}
	return false
}

// loopTools are answered by the loop itself: they talk to the owner, not
// to the world.
var loopTools = []tools.Def{
	{Name: "ask_user", Description: "Ask the owner a question and end this turn; their answer comes as their next message.",
		Params: json.RawMessage(`{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}`)},
	{Name: "progress_note", Description: "Put one short line on the owner's timeline saying what you are doing.",
		Params: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
	delegateDef,
}

func modelCalled(runID string, step int, route string, resp *llms.ContentResponse, latency time.Duration) *events.ModelCalled {
	mc := &events.ModelCalled{RunID: runID, Step: step, Route: route, Model: modelOf(route), LatencyMS: latency.Milliseconds()}
	if resp == nil || len(resp.Choices) == 0 {
		return mc
	}
	ch := resp.Choices[0]
	mc.Text = ch.Content
	for _, tc := range ch.ToolCalls {
		if tc.FunctionCall == nil {
			continue
		}
		args := json.RawMessage(tc.FunctionCall.Arguments)
		if !json.Valid(args) {
			// Arguments the model wrote are recorded as what they are: a
			// string the tool will refuse.
			args, _ = json.Marshal(tc.FunctionCall.Arguments)
		}
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		mc.ToolCalls = append(mc.ToolCalls, events.ToolCallRequest{ID: tc.ID, Name: tc.FunctionCall.Name, Arguments: args})
	}
	gi := ch.GenerationInfo
	mc.InputTokens, mc.OutputTokens = intOf(gi["PromptTokens"]), intOf(gi["CompletionTokens"])
	if c, ok := gi["CostUSD"].(float64); ok {
		mc.CostUSD = &c
	}
	return mc
}

// uniqueCallIDs renames, before the reply is recorded, a tool call whose id
// the conversation already used (some providers repeat ids across replies):
// results, approvals, delegations and the runs view all key on the id. The
// new id is derived from the step, so a replay of the recorded reply keeps it.
func uniqueCallIDs(calls []events.ToolCallRequest, history []Message, step int) {
	used := map[string]bool{}
	for _, m := range history {
		for _, c := range m.ToolCalls {
			used[c.ID] = true
		}
	}
	for i := range calls {
		id := calls[i].ID
		for n := 1; used[id] || id == ""; n++ {
			id = fmt.Sprintf("%s-s%d-%d", calls[i].ID, step, n)
		}
		calls[i].ID = id
		used[id] = true
	}
}

func intOf(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	return 0
}

func modelOf(route string) string {
	if r, err := llm.ParseRoute(route); err == nil {
		return r.Model
	}
	return route
}

func oneLine(err error) string {
	if err == nil {
		return "unknown error"
	}
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 500 {
		s = s[:500]
	}
	return s
}

// toLLM turns the history into the model's messages. Tool output is only
// ever a tool-role message: data, never the owner's words (R-SEC-1).
func toLLM(system string, msgs []Message) []llms.MessageContent {
	out := make([]llms.MessageContent, 0, len(msgs)+1)
	out = append(out, llms.TextParts(llms.ChatMessageTypeSystem, system))
	for _, m := range msgs {
		switch m.Role {
		case RoleUser:
			out = append(out, llms.TextParts(llms.ChatMessageTypeHuman, m.Text))
		case RoleAssistant:
			mc := llms.MessageContent{Role: llms.ChatMessageTypeAI}
			if m.Text != "" {
				mc.Parts = append(mc.Parts, llms.TextContent{Text: m.Text})
			}
			for _, c := range m.ToolCalls {
				mc.Parts = append(mc.Parts, llms.ToolCall{ID: c.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: c.Name, Arguments: string(c.Arguments)}})
			}
			out = append(out, mc)
		case RoleTool:
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: m.ToolCallID, Name: m.Tool, Content: m.Text},
			}})
		}
	}
	return out
}

var errNoRoutes = errors.New("the agent has no model routes: set routes in its agent.yaml (or MY_AGENT_ROUTES)")

// orText is s, or d when s is empty.
func orText(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
