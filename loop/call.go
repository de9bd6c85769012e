package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/kit"
)

// The tool-call pipeline. Every call of a reply — a registry tool, a loop
// tool (ask_user, progress_note, delegate), and later script and MCP calls —
// takes the same path, in this order:
//
//  1. lookup: a tool the agent does not have is refused;
//  2. vet: a call that would be refused anyway (arguments that do not
//     decode, a path outside the workspace) is refused before anyone is
//     asked to approve it;
//  3. gate: Gate's verdict, in R-GATE-4's fixed order; Ask records an
//     approval and pauses the turn;
//  4. run, through stages that wrap the tool like decorators (as crush's
//     hooked_tool wraps every tool): hooked (PreToolUse, which can block,
//     and PostToolUse) around recorded (tool_called) around cut (truncate
//     and spill) around the tool itself;
//  5. complete: tool_completed, with the result's parts as references (an
//     image kept in the spill folder) and its metadata, recorded even when
//     shutdown began while the tool ran.
//
// A loop tool that only talks to the owner (ask_user, progress_note) skips
// 4's stages: nothing runs that a crash could cut or a hook could guard. A
// call decided by an approval enters at 4. A call recorded as started and
// never finished is closed as interrupted — never run twice — unless its
// tool resumes (delegate waits for its child again).

// toolCall is one call on its way through the pipeline; the stages fill in
// what tool_completed records.
type toolCall struct {
	events.ToolCallRequest
	runID string
	step  int
	tool  tools.Tool

	res       tools.Result
	outcome   string // why the harness answered instead of the tool
	truncated bool
	spill     string
	delegate  *events.DelegateResult
	start     time.Time
}

// stage runs a call that the gate let through, usually around a next stage.
type stage func(ctx context.Context, c *toolCall) error

// tool finds a tool by name, whether or not the agent may use it: in the
// registry, or among the loop's own tools, which every turn knows whether
// or not the registry it was given holds them.
func (t *Turn) tool(name string) (tools.Tool, bool) {
	if t.deps.Tools != nil {
		if tool, ok := t.deps.Tools.Lookup(name); ok {
			return tool, true
		}
	}
	for _, tool := range Tools() {
		if tool.Def().Name == name {
			return tool, true
		}
	}
	return nil, false
}

// lookup finds a tool the agent may use: one its tools list names, or a
// loop tool any agent may call (it only talks to the owner).
func (t *Turn) lookup(ctx context.Context, name string) (tools.Tool, bool) {
	if strings.HasPrefix(name, mcpPrefix) {
		// An MCP tool: one this conversation loaded with tool_search.
		if t.deps.Services.MCP == nil || len(t.agent.MCP) == 0 || !t.isLoaded(name) {
			return nil, false
		}
		return t.deps.Services.MCP.Lookup(ctx, t.agent.MCP, name)
	}
	tool, ok := t.tool(name)
	if !ok || !(slices.Contains(t.agent.Tools, name) || traitsOf(tool).anyAgent || t.handedOut(ctx, name)) {
		return nil, false
	}
	return tool, true
}

// mcpPrefix starts every MCP tool's name (tools/mcp.Prefix).
const mcpPrefix = "mcp__"

// handedOut: a tool the agent gets from what it has, not from its tools
// list — tool_search with MCP servers, tool_script with a callable
// read-only tool.
func (t *Turn) handedOut(ctx context.Context, name string) bool {
	switch name {
	case ToolSearchTool:
		return len(t.agent.MCP) > 0 && t.deps.Services.MCP != nil
	case ToolScriptTool:
		_, ok := t.scriptDef(ctx)
		return ok
	}
	return false
}

// defs are the definitions of the agent's tools: its own sorted by name,
// then tool_search when it has MCP servers, tool_script when it holds a
// callable read-only tool, then the MCP tools this conversation loaded,
// sorted by name.
func (t *Turn) defs(ctx context.Context) []tools.Def {
	var defs []tools.Def
	if t.deps.Tools != nil {
		defs = t.deps.Tools.Defs(t.agent.Tools)
	}
	for _, lt := range Tools() {
		if d := lt.Def(); slices.Contains(t.agent.Tools, d.Name) && !slices.ContainsFunc(defs, func(x tools.Def) bool { return x.Name == d.Name }) {
			defs = append(defs, d)
		}
	}
	slices.SortFunc(defs, func(a, b tools.Def) int { return strings.Compare(a.Name, b.Name) })
	// What the model is told matches the gate table: a tool the seat does
	// not offer is not declared.
	seat := t.seatKind(t.read())
	defs = slices.DeleteFunc(defs, func(d tools.Def) bool { return !Offered(d.Name, seat) })
	if t.handedOut(ctx, ToolSearchTool) && !slices.ContainsFunc(defs, func(x tools.Def) bool { return x.Name == ToolSearchTool }) {
		defs = append(defs, toolSearch{}.Def())
	}
	// tool_script after the built-ins, delegate and tool_search, described
	// with what it can call now (R-SCR).
	defs = slices.DeleteFunc(defs, func(x tools.Def) bool { return x.Name == ToolScriptTool })
	if d, ok := t.scriptDef(ctx); ok {
		defs = append(defs, d)
	}
	for _, mt := range t.loadedTools(ctx) {
		d := mt.Def() // its server's words are fenced; no frame of ours either
		d.Description = Unframe(t.secrets().String(d.Description))
		defs = append(defs, d)
	}
	return defs
}

func (t *Turn) toolEnv() tools.Env {
	var cv tools.CanvasTurn
	var untrusted string
	t.conv.View(func(st *State) {
		untrusted = st.RunUntrusted
		cv = tools.CanvasTurn{RunID: st.OpenRun, Channel: st.CanvasChannel(), RootID: st.RootID, Seen: st.CanvasSeen(),
			Created: st.RunCanvas.Created, Writes: maps.Clone(st.RunCanvas.Writes)}
	})
	ws := t.agent.Workspace
	if t.seated && t.seat.Member != "" {
		// A member works in its claimed task's folder, until the turn ends.
		if dir, _ := t.deps.Services.Teams.Workdir(t.seat, ""); dir != "" {
			ws = dir
		}
	}
	return tools.Env{
		Canvas:       cv,
		Workspace:    ws,
		AgentID:      t.agent.ID,
		Conversation: t.conv.ID(),
		Spills:       t.spills(),
		Agent:        t.agent.Policy,
		AgentDir:     t.agent.Dir,
		HomeDir:      t.deps.HomeDir,
		RunID:        cv.RunID,
		Untrusted:    untrusted,
	}
}

// secrets are the home's secrets, the redactor of the log t appends to.
func (t *Turn) secrets() *events.Redactor { return t.conv.convs.Secrets() }

// spills are where the turn's cut outputs and result images are kept:
// Services.Spills (crew serve's object store), else spill/ of the home
// in files; nil without either.
func (t *Turn) spills() tools.Spills {
	if s := t.deps.Services.Spills; s != nil {
		return s
	}
	if t.deps.HomeDir == "" {
		return nil
	}
	return tools.SpillDir(filepath.Join(t.deps.HomeDir, "spill"))
}

func unknownTool(name string) string {
	return fmt.Sprintf("Unknown tool %q: it is not one of your tools.", name)
}

// call takes a new call of the reply through the whole pipeline. paused:
// the gate asked for an approval, or the call asked the owner a question.
func (t *Turn) call(ctx context.Context, s snapshotOf, c events.ToolCallRequest) (paused bool, err error) {
	tc := &toolCall{ToolCallRequest: c, runID: s.openRun, step: s.step}
	tool, ok := t.lookup(ctx, c.Name)
	if !ok {
		return false, t.result(ctx, s.openRun, s.step, c, unknownTool(c.Name), true, "blocked")
	}
	tc.tool = tool
	if text, outcome, refused := t.vet(tool, c); refused {
		return false, t.result(ctx, s.openRun, s.step, c, text, true, outcome)
	}
	if err := t.check(tool, c); err != nil {
		return false, t.emit(ctx, &events.ToolCompleted{RunID: s.openRun, Step: s.step, CallID: c.ID, Tool: c.Name,
			Output: err.Error(), IsError: true, Outcome: "blocked", RefusedBy: events.RefusedByCheck})
	}
	decision, reason := SeatGate(tool, t.seatKind(s), t.toolEnv(), c.Arguments, s.auto)
	switch decision {
	case NotOffered:
		return false, t.result(ctx, s.openRun, s.step, c, unknownTool(c.Name), true, "blocked")
	case Refused:
		return false, t.result(ctx, s.openRun, s.step, c, reason, true, "blocked")
	case AsksOwner:
		return true, t.ask(ctx, s, c)
	case Asks:
		return true, t.emit(ctx, &events.ApprovalRequested{
			ApprovalID: t.deps.Clock.NewID(), RunID: s.openRun, Step: s.step, CallID: c.ID, Tool: c.Name,
			Arguments: c.Arguments, Reason: reason, ExpiresAt: t.deps.Clock.Now().Add(t.ttl(s)).UTC(),
		})
	}
	return false, t.run(ctx, tc)
}

// seatKind is where this turn sits, as the gate table sees it.
func (t *Turn) seatKind(s snapshotOf) SeatKind {
	k := SeatKind{Channel: s.canvasChannel, Autonomous: s.auton || t.agent.Autonomous}
	switch {
	case t.seated && t.seat.Member != "":
		k.Member = true
	case s.child:
		k.Child = true
	case t.seated:
		k.Lead = true
	}
	return k
}

// vet says why a call would be refused anyway, before the gate.
func (t *Turn) vet(tool tools.Tool, c events.ToolCallRequest) (text, outcome string, refused bool) {
	if lt, ok := tool.(turnTool); ok {
		return lt.vet(t, c)
	}
	if t.seated && t.seat.Member != "" {
		if _, refusal := t.deps.Services.Teams.Workdir(t.seat, c.Name); refusal != "" {
			return refusal, "blocked", true
		}
	}
	return "", "", false
}

// check is the tool's own Check of the call's arguments (schema, paths,
// the wall, a page's refs), before the gate; a loop tool vets its own.
// A replayed tool answers as the call's Check was recorded.
func (t *Turn) check(tool tools.Tool, c events.ToolCallRequest) error {
	switch tool := tool.(type) {
	case turnTool:
		return nil
	case checkedAsRecorded:
		return tool.checkAsRecorded(t.toolEnv(), c)
	}
	return tools.Check(tool, t.toolEnv(), c.Arguments)
}

// approved runs a call whose approval was given.
func (t *Turn) approved(ctx context.Context, runID string, step int, c events.ToolCallRequest) error {
	tool, ok := t.lookup(ctx, c.Name)
	if !ok {
		return t.result(ctx, runID, step, c, unknownTool(c.Name), true, "blocked")
	}
	return t.run(ctx, &toolCall{ToolCallRequest: c, runID: runID, step: step, tool: tool})
}

// run takes a call the gate let through to its recorded result. A loop tool
// that only talks to the owner is answered at once: no tool_called (nothing
// ran that a crash could cut) and no hooks (nothing a guard could stop).
func (t *Turn) run(ctx context.Context, c *toolCall) error {
	var chain stage
	if traitsOf(c.tool).instant {
		chain = t.invoke
	} else {
		chain = t.hooked(t.recorded(t.cut(t.invoke)))
	}
	if err := chain(ctx, c); err != nil {
		return err
	}
	return t.complete(ctx, c)
}

// resume carries on a call recorded as started whose tool resumes.
func (t *Turn) resume(ctx context.Context, c *toolCall) error {
	c.start = t.deps.Clock.Now()
	if err := t.cut(t.invoke)(ctx, c); err != nil {
		return err
	}
	return t.complete(ctx, c)
}

// hooked runs the owner's PreToolUse hooks before the call — one that
// blocks becomes the result, and nothing runs — and PostToolUse after it,
// whose feedback is added to the result (R-LOOP-8).
func (t *Turn) hooked(next stage) stage {
	return func(ctx context.Context, c *toolCall) error {
		reason, blocked, err := t.hook(ctx, c.runID, c.step, kit.PreToolUse, &c.ToolCallRequest, map[string]any{"tool_input": rawArgs(c.Arguments)})
		if err != nil {
			return err
		}
		if blocked {
			c.res = tools.Result{Output: "Blocked by the owner's PreToolUse hook, so it was not run and nothing changed: " + reason, IsError: true}
			c.outcome = "blocked"
			return nil
		}
		if err := next(ctx, c); err != nil {
			return err
		}
		if c.outcome == "stopped" { // the owner stopped it: no hook runs after
			return nil
		}
		// PostToolUse hooks run under their own timeouts; a shutdown cuts
		// them, never the result.
		if feedback, _, err := t.hook(ctx, c.runID, c.step, kit.PostToolUse, &c.ToolCallRequest, map[string]any{
			"tool_input": rawArgs(c.Arguments), "tool_response": map[string]any{"output": c.res.Output, "is_error": c.res.IsError}}); err == nil && feedback != "" {
			c.res.Output += "\n\n[The owner's PostToolUse hook says]\n" + strings.TrimSpace(feedback)
		}
		return nil
	}
}

// recorded records the call as started before it runs. A crash between
// this record and the result leaves the call "calling": the next pass
// closes it as interrupted, never re-runs it.
func (t *Turn) recorded(next stage) stage {
	return func(ctx context.Context, c *toolCall) error {
		emit := t.emit
		if onceIsTwice(c) {
			emit = t.emitDeferred
		}
		if err := emit(ctx, &events.ToolCalled{RunID: c.runID, Step: c.step, CallID: c.ID, Tool: c.Name, Arguments: c.Arguments}); err != nil {
			return err
		}
		c.start = t.deps.Clock.Now()
		return next(ctx, c)
	}
}

// onceIsTwice: running c again changes nothing — one of our read-only
// tools (an MCP server's read-only hint is its word, not ours) — so its
// start is no decision of its own: recorded deferred (ADR 0008), it is
// durable with its result's next reservation. A process crash keeps the
// record either way; a power cut before that fsync loses it, and the
// call is run again instead of closed as interrupted.
func onceIsTwice(c *toolCall) bool {
	return tools.ReadOnly(c.tool) && !strings.HasPrefix(c.Name, mcpPrefix)
}

// cut keeps the model's view of the output to tool_output_chars and spills
// the full text, readable again with tool_output_read.
func (t *Turn) cut(next stage) stage {
	next = t.cleaned(next)
	return func(ctx context.Context, c *toolCall) error {
		if err := next(ctx, c); err != nil {
			return err
		}
		if c.outcome != "" || c.tool.Def().Uncut { // the harness's own words, or a tool that cuts its own
			return nil
		}
		full := c.res.Output
		shown, truncated := tools.Truncate(full, t.agent.ToolOutputChars)
		if truncated {
			spill, err := tools.Spill(t.secrets(), t.toolEnv(), c.ID, full)
			if err != nil {
				shown += "\n(The full output could not be kept: " + err.Error() + ")"
				spill = ""
			}
			c.spill = spill
		}
		c.res.Output, c.truncated = shown, truncated
		return nil
	}
}

// cleaned redacts (R-X-6) and unframes (R-SEC-1: a tool cannot write the
// hook's frame below) a tool's output before anything cuts it, so what the
// model is shown, the spill and the offsets into it agree.
func (t *Turn) cleaned(next stage) stage {
	return func(ctx context.Context, c *toolCall) error {
		if err := next(ctx, c); err != nil {
			return err
		}
		if c.outcome == "" {
			c.res.Output = Unframe(t.secrets().String(c.res.Output))
		}
		return nil
	}
}

// nested takes one call of a script (R-SCR), which the script's gate check
// let through, along the same stages as a direct call but two: its record
// is the script's nested_call, and the script cuts its own answers. The
// owner's hooks guard it as they guard a direct call.
func (t *Turn) nested(ctx context.Context, c *toolCall) error {
	return t.hooked(t.cleaned(t.invoke))(ctx, c)
}

// invoke runs the tool itself. A Go error from a registry tool means the
// harness failed to run it: the model is told so, unless the turn is
// stopping (then the call stays open and the next start closes it).
func (t *Turn) invoke(ctx context.Context, c *toolCall) error {
	if lt, ok := c.tool.(turnTool); ok {
		res, err := lt.answer(ctx, t, c)
		if err != nil && stopped(ctx) {
			t.stoppedWhileRunning(c, res)
			return nil
		}
		if err != nil {
			return err
		}
		c.res = res
		return nil
	}
	env := t.toolEnv()
	env.CallID = c.ID
	res, err := c.tool.Run(ctx, env, c.Arguments)
	if err != nil {
		if stopped(ctx) {
			t.stoppedWhileRunning(c, res)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		res = tools.Result{Output: "The harness failed to run this tool: " + err.Error(), IsError: true}
	}
	c.res = res
	return nil
}

// stoppedWhileRunning makes the result of a call the owner's stop cut
// off: what it printed so far (redacted and unframed like any output),
// then the harness's word that it was stopped; never run again.
func (t *Turn) stoppedWhileRunning(c *toolCall, res tools.Result) {
	out := stoppedRunning
	if res.Output != "" {
		out = Unframe(t.secrets().String(res.Output)) + "\n\n[" + stoppedRunning + "]"
	}
	if c.Name == DelegateTool {
		out += " The delegated agent was stopped too."
	}
	c.res = tools.Result{Output: out, IsError: true}
	c.outcome = "stopped"
}

// complete records the call's result. The tool ran: its result is recorded
// even if shutdown began meanwhile, or the next start would have to call it
// interrupted.
func (t *Turn) complete(ctx context.Context, c *toolCall) error {
	var ms int64
	if !c.start.IsZero() {
		ms = t.deps.Clock.Now().Sub(c.start).Milliseconds()
	}
	t.capStored(c)
	parts, note := t.keepParts(c)
	meta := c.res.Meta
	if _, err := json.Marshal(meta); err != nil {
		note += "\n(The tool's metadata could not be kept: " + err.Error() + ")"
		meta = nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	// Durable with the next call's reservation (or whatever the pass
	// appends next, or its end).
	return t.emitDeferred(rctx, &events.ToolCompleted{
		RunID: c.runID, Step: c.step, CallID: c.ID, Tool: c.Name, Output: c.res.Output + note, IsError: c.res.IsError,
		Truncated: c.truncated, SpillPath: c.spill, DurationMS: ms, Outcome: c.outcome, Delegate: c.delegate,
		Parts: parts, Meta: meta, Canvas: c.res.Canvas,
	})
}

// MaxStoredOutput caps the text one tool_completed stores, on every path
// — a tool that cuts its own output, an error, a traceback, the harness's
// words: the log is append-only and every page reads it.
const MaxStoredOutput = 256 << 10

// capStored keeps at most MaxStoredOutput bytes of the result's text in
// the log; the whole goes to the spill file (unless cut already spilled
// it) and the kept text ends with a pointer to it.
func (t *Turn) capStored(c *toolCall) {
	limit := MaxStoredOutput
	full := c.res.Output
	if len(full) <= limit {
		return
	}
	kept := strings.ToValidUTF8(full[:limit], "")
	spill := c.spill
	var where string
	if spill == "" {
		var err error
		if spill, err = tools.Spill(t.secrets(), t.toolEnv(), c.ID, full); err != nil {
			spill, where = "", " The whole could not be kept: "+err.Error()+"."
		}
	}
	if spill != "" {
		where = " The whole is in " + spill + ": read it with tool_output_read (call_id " + c.ID + ")."
	}
	c.res.Output = kept + fmt.Sprintf("\n\n[Cut by the harness: this result was %d bytes; the first %d are kept.%s]", len(full), len(kept), where)
	c.truncated, c.spill = true, spill
}

// keepParts turns a result's parts into references for tool_completed: an
// image's bytes go to the spill folder, never into the log. note tells the
// model about a part that could not be kept.
func (t *Turn) keepParts(c *toolCall) (parts []events.ToolPart, note string) {
	for i, p := range c.res.Parts {
		tp := events.ToolPart{Kind: p.Kind, Text: p.Text, MIME: p.MIME, Path: p.Path}
		switch p.Kind {
		case tools.PartImage:
			if len(p.Data) > 0 {
				rel, err := tools.SpillImage(t.secrets(), t.toolEnv(), c.ID, i+1, p.MIME, p.Data)
				if err != nil {
					note += "\n(An image of this result could not be kept: " + err.Error() + ")"
					continue
				}
				tp.Path, tp.Bytes = rel, len(p.Data)
			}
		case tools.PartText, tools.PartFile:
		default:
			note += fmt.Sprintf("\n(A part of kind %q could not be kept: the harness knows text, image and file parts.)", p.Kind)
			continue
		}
		parts = append(parts, tp)
	}
	return parts, note
}

// result records a result the harness gives instead of running the call.
func (t *Turn) result(ctx context.Context, runID string, step int, c events.ToolCallRequest, text string, isErr bool, outcome string) error {
	return t.emit(ctx, &events.ToolCompleted{RunID: runID, Step: step, CallID: c.ID, Tool: c.Name, Output: text, IsError: isErr, Outcome: outcome})
}
