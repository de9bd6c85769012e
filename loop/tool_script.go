package loop

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
	"github.com/my-agent-crew/crew/tools/script"
)

// ToolScriptTool runs a script that calls tools (R-SCR).
const ToolScriptTool = "tool_script"

// ScriptGated is the agent.yaml script_calls value that lets a script
// call tools that change things, each through the gate's verdict.
const ScriptGated = "gated"

//go:embed tool_script.md
var toolScriptDescription string

type toolScript struct{}

func (toolScript) Def() tools.Def {
	return tools.Def{Name: ToolScriptTool, Description: strings.TrimSpace(toolScriptDescription), Uncut: true,
		Params: json.RawMessage(`{"type":"object","properties":{"script":{"type":"string","description":"the Starlark script"}},"required":["script"]}`)}
}

func (toolScript) Run(context.Context, tools.Env, json.RawMessage) (tools.Result, error) {
	return tools.Failf("tool_script runs only within a turn of the loop"), nil
}

func (toolScript) traits() traits { return traits{} }

func (toolScript) vet(_ *Turn, c events.ToolCallRequest) (string, string, bool) {
	var a struct {
		Script string `json:"script"`
	}
	if json.Unmarshal(c.Arguments, &a) != nil || strings.TrimSpace(a.Script) == "" {
		return `Not run: tool_script needs {"script": "<Starlark source>"}.`, "", true
	}
	return "", "", false
}

// scriptable is a tool a script may call: not a loop tool (they talk to
// the owner or the crew), nor tool_script itself; delegate only as
// tools.delegate, in gated mode.
func scriptable(tool tools.Tool) bool {
	_, loopTool := tool.(turnTool)
	return !loopTool
}

// readOnly: the tool only reads (tools.ReadOnly) and this call would not
// ask.
func readOnly(tool tools.Tool, env tools.Env, args json.RawMessage) bool {
	return tools.ReadOnly(tool) && tools.AskReason(tool, env, args) == ""
}

// scriptTools are the tools a script of this agent may reach, by name:
// its own registry tools and its MCP servers' offered tools (loaded or
// not), sorted; with read-only mode only those that only read. In gated
// mode an agent holding delegate reaches it too (tools.delegate).
func (t *Turn) scriptTools(ctx context.Context) []tools.Tool {
	gated := t.agent.ScriptCalls == ScriptGated
	var out []tools.Tool
	for _, name := range t.agent.Tools {
		tool, ok := t.tool(name)
		switch {
		case !ok:
		case name == DelegateTool && gated:
			out = append(out, tool)
		case scriptable(tool) && (gated || tools.ReadOnly(tool)):
			out = append(out, tool)
		}
	}
	mcpTools, _ := t.mcpTools(ctx)
	for _, tool := range mcpTools {
		if gated || tools.ReadOnly(tool) {
			out = append(out, tool)
		}
	}
	slices.SortFunc(out, func(a, b tools.Tool) int { return strings.Compare(a.Def().Name, b.Def().Name) })
	return out
}

// scriptDef is tool_script as this agent is offered it: only when it
// holds at least one callable read-only tool, described with those it can
// call, so a change of its MCP tools re-describes it.
func (t *Turn) scriptDef(ctx context.Context) (tools.Def, bool) {
	callable := t.scriptTools(ctx)
	if !slices.ContainsFunc(callable, tools.ReadOnly) {
		return tools.Def{}, false
	}
	d := toolScript{}.Def()
	names := make([]string, len(callable))
	for i, x := range callable {
		names[i] = x.Def().Name
	}
	d.Description += "\n\nTools a script can call: " + strings.Join(names, ", ") + "."
	if t.agent.ScriptCalls == ScriptGated {
		d.Description += " The owner lets scripts call tools that change things (script_calls: gated): each such call takes the approval gate's verdict first, and one that would need the owner's approval stops the script."
		if slices.Contains(names, DelegateTool) {
			d.Description += " `tools.delegate(agent, task)` hands a task to another agent of the crew, as delegate does, and returns its answer."
		}
	}
	return d, true
}

// scriptHost is one tool_script call's edge to the turn.
type scriptHost struct {
	t        *Turn
	c        *toolCall
	callable []tools.Tool

	mu         sync.Mutex
	delegating int               // delegations vetted, not yet recorded
	ran        map[int]*toolCall // finished calls, until recorded
	cut        map[int]bool      // calls the owner's stop cut, recorded stopped
}

func (h *scriptHost) find(name string) (tools.Tool, bool) {
	i := slices.IndexFunc(h.callable, func(x tools.Tool) bool { return x.Def().Name == name })
	if i < 0 {
		return nil, false
	}
	return h.callable[i], true
}

// Vet: read-only mode refuses a tool that changes things (a value the
// script sees); gated mode asks the gate and stops the script at a call
// that would need a human or that the owner forbids.
func (h *scriptHost) Vet(name string, args json.RawMessage) (refusal, stop string) {
	mode := "read"
	if h.t.agent.ScriptCalls == ScriptGated {
		mode = ScriptGated
	}
	if seat := h.t.seatKind(h.t.read()); !Offered(name, SeatKind{Script: mode, Lead: seat.Lead, Member: seat.Member, Child: seat.Child}) {
		// What the seat does not offer, a script is not offered either
		// (the gate table's "not offered").
		return fmt.Sprintf("unknown tool %q: it is not one of the tools a script can call (see tools.names()).", name), ""
	}
	tool, ok := h.find(name)
	if !ok {
		if other, known := h.t.tool(name); known && (!scriptable(other) || slices.Contains(h.t.agent.Tools, name)) {
			if name == DelegateTool && slices.Contains(h.t.agent.Tools, name) {
				return "delegate cannot be called from a script unless the owner set script_calls: gated; call delegate directly.", ""
			}
			return fmt.Sprintf("%s cannot be called from a script: call it directly.", name), ""
		}
		if strings.HasPrefix(name, mcpPrefix) && h.t.deps.Services.MCP != nil {
			if mt, found := h.t.deps.Services.MCP.Lookup(context.Background(), h.t.agent.MCP, name); found {
				if err := tools.Check(mt, h.t.toolEnv(), args); err != nil {
					return err.Error(), "" // its server is not answering
				}
				return fmt.Sprintf("%s cannot be called from a script: it changes things; call it directly.", name), ""
			}
		}
		return fmt.Sprintf("unknown tool %q: it is not one of the tools a script can call (see tools.names()).", name), ""
	}
	env := h.t.toolEnv()
	if name == DelegateTool {
		return h.vetDelegate(args, false), ""
	}
	if h.t.agent.ScriptCalls != ScriptGated {
		if !readOnly(tool, env, args) {
			return fmt.Sprintf("%s cannot be called from a script: it changes things; call it directly.", name), ""
		}
		if err := tools.Check(tool, env, args); err != nil {
			return err.Error(), ""
		}
		return "", ""
	}
	if err := tools.Check(tool, env, args); err != nil {
		return "", fmt.Sprintf("STOP: %s was refused (%s). A script cannot make this call; call %s directly if it is still needed.", name, oneLineText(err.Error(), 300), name)
	}
	var auton bool
	var auto []string
	h.t.conv.View(func(st *State) { auton, auto = st.Autonomous, slices.Clone(st.AutoApprove) })
	seat := h.t.seatKind(h.t.read())
	if d, why := SeatGate(tool, SeatKind{Script: ScriptGated, Autonomous: auton || h.t.agent.Autonomous, Lead: seat.Lead, Member: seat.Member, Child: seat.Child}, env, args, auto); d != Runs {
		if why == "" { // not offered: no STOP, the call is unknown here
			return fmt.Sprintf("unknown tool %q: it is not one of the tools a script can call (see tools.names()).", name), ""
		}
		return "", why
	}
	return "", ""
}

// vetDelegate refuses a tools.delegate as a direct delegate call would be
// refused, counting the script's delegations running and not yet
// recorded; reserve counts this one as running when it may run (Run
// asks again, so the calls of one batch cannot all pass on one count).
func (h *scriptHost) vetDelegate(args json.RawMessage, reserve bool) string {
	a, ok := delegateArgsOf(args)
	if !ok {
		return "tools.delegate needs an agent id and the complete task, both non-empty."
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var why string
	h.t.conv.View(func(st *State) {
		cp := *st
		cp.Delegations += h.delegating
		why = h.t.refuseDelegation(&cp, a.Agent)
	})
	if why == "" && reserve {
		h.delegating++
	}
	return why
}

// Run runs the script's n-th call through the pipeline (Turn.nested):
// the owner's PreToolUse hooks (one that blocks is the script's error
// value), the tool, its output redacted and unframed, then PostToolUse,
// whose feedback is added to what the script receives. The call is named
// <script call id>.<n>, as its spill is; what it touched of a canvas and
// the child a delegation ran go with its nested_call.
func (h *scriptHost) Run(ctx context.Context, n int, name string, args json.RawMessage) (string, bool, error) {
	tool, _ := h.find(name)
	if name == DelegateTool {
		if why := h.vetDelegate(args, true); why != "" {
			return why, true, nil
		}
	}
	c := &toolCall{ToolCallRequest: events.ToolCallRequest{ID: fmt.Sprintf("%s.%d", h.c.ID, n), Name: name, Arguments: args},
		runID: h.c.runID, step: h.c.step, tool: tool}
	if err := h.t.nested(ctx, c); err != nil {
		return "", false, err
	}
	if stopped(ctx) {
		// The owner's stop cut it: recorded here, stopped, as the script
		// ends with the turn and never reports it.
		if c.outcome == "" {
			h.t.stoppedWhileRunning(c, c.res)
		}
		h.mu.Lock()
		if h.cut == nil {
			h.cut = map[int]bool{}
		}
		h.cut[n] = true
		h.mu.Unlock()
		e := &events.NestedCall{RunID: h.c.runID, Step: h.c.step, CallID: h.c.ID, N: n, Kind: "tool", Tool: name,
			Arguments: args, IsError: true, Outcome: "stopped", Chars: len(c.res.Output)}
		if err := h.t.emit(context.WithoutCancel(ctx), e); err != nil {
			return "", false, err
		}
		return c.res.Output, true, ctx.Err()
	}
	h.mu.Lock()
	if h.ran == nil {
		h.ran = map[int]*toolCall{}
	}
	h.ran[n] = c
	h.mu.Unlock()
	return c.res.Output, c.res.IsError, nil
}

// Ask answers llm.classify and llm.summarise on the agent's first route,
// with no tools: a model call of purpose script, in the turn's cost cap.
func (h *scriptHost) Ask(ctx context.Context, a script.LLMAsk) (string, bool, *float64, string, error) {
	var cost, limit float64
	h.t.conv.View(func(st *State) { cost, limit = st.CostUSD, st.Budget(h.t.agent.CostCapUSD) })
	if limit > 0 && cost >= limit {
		return "", false, nil, "STOP: the turn's cost cap is reached; the script's model question was not asked.", nil
	}
	if len(h.t.agent.Routes) == 0 {
		return "no model route", true, nil, "", nil
	}
	route := h.t.agent.Routes[0]
	var system string
	switch a.Kind {
	case "classify":
		system = "Classify the text. Answer with exactly one of these labels and nothing else: " + strings.Join(a.Labels, ", ")
	default:
		system = fmt.Sprintf("Summarise the text in at most %d characters. Answer with the summary only.", a.MaxChars)
	}
	model, err := h.t.deps.Models.Model(route)
	if err != nil {
		return "the model could not be reached: " + err.Error(), true, nil, "", nil
	}
	start := h.t.deps.Clock.Now()
	// The script's question is reserved against the turn's budgets too
	// (R-X-5), as the agent's, with purpose script.
	req := llm.Request{Route: route, Purpose: events.PurposeScript, Payer: h.t.payer(h.t.read(), h.c.runID, h.c.step),
		Messages: []llm.Message{llm.Text(llm.RoleSystem, system), llm.Text(llm.RoleUser, a.Text)}}
	rep, err := llm.Call(ctx, model, req)
	if err != nil {
		if ctx.Err() != nil {
			return "", false, nil, "", ctx.Err()
		}
		if _, ok := errors.AsType[*budget.StoreError](err); ok {
			// The call never left (no model_called): the store failed, not
			// the model. The script is told so and may ask again; failing
			// the pass would close the whole script as interrupted.
			return "the model was not asked: the event store could not record its budget reservation (" + oneLine(err) + "); ask again", true, nil, "", nil
		}
		mc := &events.ModelCalled{RunID: h.c.runID, Step: h.c.step, Purpose: events.PurposeScript, Route: route, Model: modelOf(route), Error: oneLine(err)}
		if err := h.t.emit(ctx, mc); err != nil {
			return "", false, nil, "", err
		}
		return "the model failed: " + oneLine(err), true, nil, "", nil
	}
	mc := modelCalled(h.c.runID, h.c.step, route, rep, h.t.deps.Clock.Now().Sub(start))
	mc.Purpose, mc.ToolCalls = events.PurposeScript, nil
	if err := h.t.emit(ctx, mc); err != nil {
		return "", false, nil, "", err
	}
	answer := strings.TrimSpace(mc.Text)
	if a.Kind == "classify" {
		for _, l := range a.Labels {
			if strings.EqualFold(strings.Trim(answer, " .\"'`"), l) {
				return l, false, mc.CostUSD, "", nil
			}
		}
		for _, l := range a.Labels {
			if strings.Contains(strings.ToLower(answer), strings.ToLower(l)) {
				return l, false, mc.CostUSD, "", nil
			}
		}
		return fmt.Sprintf("the model answered %q, which is none of the labels", oneLineText(answer, 200)), true, mc.CostUSD, "", nil
	}
	if r := []rune(answer); a.MaxChars > 0 && len(r) > a.MaxChars {
		answer = string(r[:a.MaxChars])
	}
	return answer, false, mc.CostUSD, "", nil
}

func (h *scriptHost) Names() []string {
	out := make([]string, len(h.callable))
	for i, x := range h.callable {
		out[i] = x.Def().Name
	}
	return out
}

func (h *scriptHost) Search(q string) []map[string]any {
	var out []map[string]any
	for _, x := range searchTools(h.callable, q) {
		out = append(out, map[string]any{"name": x.Def().Name, "description": aboutTool(h.t.secrets(), x)})
	}
	if out == nil {
		out = []map[string]any{}
	}
	return out
}

func (h *scriptHost) Describe(name string) (map[string]any, bool) {
	tool, ok := h.find(name)
	if !ok {
		return nil, false
	}
	d := tool.Def()
	var params any
	json.Unmarshal(d.Params, &params)
	return map[string]any{"name": d.Name, "description": Unframe(h.t.secrets().String(d.Description)), "parameters": params, "read_only": tools.ReadOnly(tool)}, true
}

// Nested records a call as it ends. A delegation's line carries its
// child and what the child spent (the call's price, not the run's: the
// child's run has its own); a canvas tool's the canvas it touched, which
// the conversation folds as it does a direct call's.
func (h *scriptHost) Nested(ctx context.Context, n script.Nested) error {
	e := &events.NestedCall{RunID: h.c.runID, Step: h.c.step, CallID: h.c.ID, N: n.N, Kind: n.Kind, Tool: n.Tool,
		Arguments: n.Args, IsError: n.IsError, Chars: n.Chars, DurationMS: n.DurationMS, CostUSD: n.CostUSD,
		Untrusted: strings.Contains(n.Output, fence.Marker)}
	h.mu.Lock()
	c := h.ran[n.N]
	delete(h.ran, n.N)
	cut := h.cut[n.N]
	h.mu.Unlock()
	if cut {
		return nil // recorded stopped when the stop cut it
	}
	if c != nil {
		e.Canvas = c.res.Canvas
		if p, ok := c.res.Meta["provenance"].(map[string]any); ok {
			e.Provenance = p
		}
		if d := c.delegate; d != nil {
			e.Delegate, e.CostUSD = d, d.CostUSD
		}
	}
	err := h.t.emit(ctx, e)
	if c != nil && n.Tool == DelegateTool { // folded now: st.Delegations counts it
		h.mu.Lock()
		h.delegating--
		h.mu.Unlock()
	}
	return err
}

func (h *scriptHost) Spill(n int, full string) (string, error) {
	ref := fmt.Sprintf("%s.%d", h.c.ID, n)
	_, err := tools.Spill(h.t.secrets(), h.t.toolEnv(), ref, full)
	return ref, err
}

// ScriptStore keeps what scripts put with store.set, per agent and scope
// (a job, or a conversation); script.Store in a bucket of the log's
// cluster, so every crew process on it shares them.
type ScriptStore interface {
	Load(ctx context.Context, agent, scope string) (map[string]json.RawMessage, error)
	Save(ctx context.Context, agent, scope string, m map[string]json.RawMessage) error
}

// storeScope is whose store a script reads and writes: per agent, and
// per job (a scheduled job's conversations share it) or conversation.
func (t *Turn) storeScope() (agent, scope string) {
	scope = t.conv.ID()
	t.conv.View(func(st *State) {
		if job, ok := strings.CutPrefix(st.Channel, "job:"); ok && job != "" {
			scope = "job-" + job
		}
	})
	return t.agent.ID, scope
}

// answer runs the script in a child process; the result is what it
// printed, and its calls, received_chars and printed_chars go in the
// result's meta (the message's context: shown, never sent to the model).
func (toolScript) answer(ctx context.Context, t *Turn, c *toolCall) (tools.Result, error) {
	var a struct {
		Script string `json:"script"`
	}
	json.Unmarshal(c.Arguments, &a)
	h := &scriptHost{t: t, c: c, callable: t.scriptTools(ctx)}
	var used int
	t.conv.View(func(st *State) { used = st.NestedCalls })
	exe, err := os.Executable() // this executable with __script
	if err != nil {
		return tools.Result{}, err
	}
	store := t.deps.Services.Scripts
	agent, scope := t.storeScope()
	var kept map[string]json.RawMessage
	if store != nil {
		if kept, err = store.Load(ctx, agent, scope); err != nil {
			// The store is down: the script would start from nothing and
			// overwrite what it kept.
			return tools.Result{Output: "The script was not run: its store could not be read: " + err.Error(), IsError: true}, nil
		}
	}
	out, err := script.Run(ctx, script.Config{Exe: exe, Args: []string{"__script"}, Script: a.Script, Store: kept,
		TurnLeft: t.agent.MaxSteps*script.TurnCallsEach - used, Home: t.deps.HomeDir, Sandbox: t.deps.Services.Sandbox}, h)
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		return tools.Result{Output: "The script could not be run: " + err.Error(), IsError: true}, nil
	}
	var b strings.Builder
	b.WriteString(out.Printed)
	if out.Error != "" {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(out.Error)
	} else if out.Store != nil && store != nil {
		if err := store.Save(ctx, agent, scope, out.Store); err != nil {
			b.WriteString("\n(The script's store could not be saved: " + err.Error() + ")")
		}
	}
	if b.Len() == 0 {
		b.WriteString("(The script printed nothing.)")
	}
	calls := make([]map[string]any, len(out.Calls))
	for i, n := range out.Calls {
		calls[i] = map[string]any{"n": n.N, "kind": n.Kind, "tool": n.Tool, "is_error": n.IsError, "chars": n.Chars}
	}
	return tools.Result{Output: b.String(), IsError: out.Error != "",
		Meta: map[string]any{"calls": calls, "received_chars": out.ReceivedChars, "printed_chars": out.PrintedChars}}, nil
}

// Scripting is the script fold (R-SCR): NestedCalls counts the script
// calls (nested_call) of the conversation's open runs, which share
// max_steps × 10; Nesting are the nested calls of the scripts still
// running, by script call id, for the chat card to show at once.
type Scripting struct {
	NestedCalls int                            `json:"nested_calls,omitempty"`
	Nesting     map[string][]events.NestedCall `json:"nesting,omitempty"`
}

func (f *Scripting) apply(env events.Envelope, on foldOn) {
	switch e := decoded(env).(type) {
	case *events.NestedCall:
		if e.RunID != on.open {
			return
		}
		f.NestedCalls++
		if f.Nesting == nil {
			f.Nesting = map[string][]events.NestedCall{}
		}
		// Stored as each call ends; kept in the order the script wrote them.
		ns := f.Nesting[e.CallID]
		i, _ := slices.BinarySearchFunc(ns, e.N, func(x events.NestedCall, k int) int { return cmp.Compare(x.N, k) })
		f.Nesting[e.CallID] = slices.Insert(ns, i, *e)
	case *events.ToolCompleted:
		if e.Tool == ToolScriptTool {
			delete(f.Nesting, e.CallID)
		}
	}
}
