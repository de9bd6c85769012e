package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/loop/llm"
)

// callModel makes the step's model call, with the recoveries of R-LOOP-7
// on each route (see recovery.go: rate limits,
// overload, a reply cut at max_tokens, a prompt too long), then the next
// route. It returns nil reply (and nil error) when the failure was
// recorded and the loop should go on (escalation) or stop (run finished
// failed).
func (t *Turn) callModel(ctx context.Context, s snapshotOf, step int) (*events.ModelCalled, error) {
	var roster string
	if t.deps.Crew != nil {
		roster = t.deps.Crew.Roster()
	}
	var team string
	if t.seated {
		team = t.deps.Services.Teams.Prompt(t.seat, t.agent)
	}
	system, err := t.systemPrompt(Prompt{AgentDir: t.agent.Dir, Persona: t.agent.Persona, HomeDir: t.deps.HomeDir, Roster: roster,
		Team: team, Now: t.deps.Clock.Now(), Location: t.deps.Clock.Location(), CanvasReadOnly: s.canvasChannel == "api" && t.writesCanvases(),
		Secrets: t.secrets()})
	if err != nil {
		return nil, err
	}
	if p := s.pin; p != nil && p.RunID == s.openRun && p.Step == step {
		// A fork's first request sends the original step's system prompt
		// (R-X-2); its later steps read the files anew (R-HOME-4).
		system = p.System
	}
	if rec, ok := t.replayed.system(s.openRun, step); ok {
		system = rec // a replay sends what the recorded step sent
	}
	record := system
	if system == t.sentSystem {
		record = ""
	}
	routes, purpose := t.agent.Routes, "" // empty: a turn's step
	if rec, ok := t.replayed.routes(s.openRun, step); ok {
		routes = rec
	}
	if t.escalated {
		routes, purpose = []string{t.agent.EscalationRoute}, events.PurposeEscalation
	}
	if len(routes) == 0 {
		return nil, t.finish(ctx, s.openRun, events.RunFailed, "model_error", errNoRoutes.Error())
	}
	c := &stepCall{t: t, s: s, step: step, system: system, record: record, purpose: purpose, defs: t.toolDefs(ctx, s.child),
		payer: t.payer(s, s.openRun, step)}
	c.defsBytes = t.defsBytes(c.defs)
	if routes, err = c.seeing(ctx, routes); err != nil {
		return nil, err
	}
	var lastErr error
	for i, route := range routes {
		mc, routeErr, err := c.onRoute(ctx, route)
		if err != nil {
			return nil, err
		}
		if mc != nil {
			return mc, nil
		}
		if refusal, ok := errors.AsType[*budget.Refusal](routeErr); ok {
			// Nothing left: no other route is tried, no escalation.
			return nil, t.finish(ctx, s.openRun, events.RunHalted, "budget", refusal.Sentence)
		}
		lastErr = routeErr
		if i+1 < len(routes) {
			fb := &events.RouteFallback{RunID: s.openRun, Step: step, From: route, To: routes[i+1], Error: oneLine(routeErr),
				Text: c.cutText, Interrupted: c.cutText != ""}
			if err := t.emit(ctx, fb); err != nil {
				return nil, err
			}
		}
	}
	last := routes[len(routes)-1]
	failed := &events.ModelCalled{RunID: s.openRun, Step: step, Purpose: purpose, Route: last, Model: modelOf(last), Error: oneLine(lastErr), Text: c.cutText, System: record}
	if err := t.emit(ctx, failed); err != nil {
		return nil, err
	}
	t.sentSystem = system
	if !c.shown && t.canEscalate(s, step) {
		t.escalated = true
		return nil, t.emit(ctx, &events.Escalated{RunID: s.openRun, Step: step, Reason: "error", Route: t.agent.EscalationRoute, Error: oneLine(lastErr)})
	}
	return nil, t.finish(ctx, s.openRun, events.RunFailed, "model_error", oneLine(lastErr))
}

// spec is route's model spec.
func (t *Turn) spec(route string) llm.ModelSpec {
	if t.deps.Crew != nil {
		return t.deps.Crew.Spec(route)
	}
	return (*llm.Catalog)(nil).Lookup(route)
}

// canvasWriteTools are the tools that write canvases.
var canvasWriteTools = []string{"artifact_create", "artifact_edit", "artifact_rewrite", "artifact_import"}

// writesCanvases: the agent has a tool that writes canvases.
func (t *Turn) writesCanvases() bool {
	return slices.ContainsFunc(canvasWriteTools, func(n string) bool { _, ok := t.lookup(context.Background(), n); return ok })
}

// defsBytes is llm.ToolsBytes of defs, measured again only when they
// differ from the declarations the pass measured last.
func (t *Turn) defsBytes(defs []llm.Tool) int {
	if !sameDefs(t.measured, defs) {
		t.measured, t.measuredBytes = defs, llm.ToolsBytes(defs)
	}
	return t.measuredBytes
}

// sameDefs: a and b declare the same tools in the same words (parameters
// compared byte for byte).
func sameDefs(a, b []llm.Tool) bool {
	if a == nil || len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Name != y.Name || x.Description != y.Description || !bytes.Equal(x.Parameters, y.Parameters) {
			return false
		}
	}
	return true
}

// toolDefs declares the agent's tools to the model; a delegated child is
// not offered delegate (one level deep).
func (t *Turn) toolDefs(ctx context.Context, child bool) []llm.Tool {
	var out []llm.Tool
	for _, d := range t.defs(ctx) {
		if child && d.Name == DelegateTool {
			continue
		}
		out = append(out, llm.Tool{Name: d.Name, Description: d.Description, Parameters: d.Params})
	}
	return out
}

// modelCalled records rep, the reply route gave.
func modelCalled(runID string, step int, route string, rep llm.Reply, latency time.Duration) *events.ModelCalled {
	mc := &events.ModelCalled{RunID: runID, Step: step, Route: route, Model: modelOf(route), LatencyMS: latency.Milliseconds(),
		Text: rep.Text, CostUSD: rep.CostUSD, InputTokens: rep.Usage.Input, OutputTokens: rep.Usage.Output,
		CachedInputTokens: rep.Usage.CachedInput, CacheWriteTokens: rep.Usage.CacheWrite, CacheSavedUSD: rep.Usage.CacheSavedUSD}
	for _, tc := range rep.ToolCalls {
		args := json.RawMessage(tc.Arguments)
		if !json.Valid(args) {
			// Arguments the model wrote are recorded as what they are: a
			// string the tool will refuse.
			args, _ = json.Marshal(tc.Arguments)
		}
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		mc.ToolCalls = append(mc.ToolCalls, events.ToolCallRequest{ID: tc.ID, Name: tc.Name, Arguments: args})
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
func toLLM(system string, msgs []Message) []llm.Message {
	out := make([]llm.Message, 0, len(msgs)+1)
	out = append(out, llm.Text(llm.RoleSystem, system))
	for _, m := range msgs {
		switch m.Role {
		case RoleUser:
			out = append(out, llm.Text(llm.RoleUser, m.Text))
		case RoleAssistant:
			mc := llm.Message{Role: llm.RoleAssistant}
			if m.Text != "" {
				mc.Parts = []llm.Part{{Text: m.Text}}
			}
			for _, c := range m.ToolCalls {
				mc.ToolCalls = append(mc.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: string(c.Arguments)})
			}
			out = append(out, mc)
		case RoleTool:
			out = append(out, llm.ToolResult(m.ToolCallID, m.Tool, m.Text))
		}
	}
	return out
}

var errNoRoutes = errors.New(view.NoRoutes)

// HarnessCall is the model_called of one of the harness's own calls
// (summary, consolidation, …): usage and cost for the ledger, no run. The
// text is kept by the event the call was for (the summary, the proposal).
func HarnessCall(purpose string, a llm.Answer) *events.ModelCalled {
	return &events.ModelCalled{Purpose: purpose, Route: a.Route, Model: modelOf(a.Route),
		InputTokens: a.Usage.Input, OutputTokens: a.Usage.Output, CostUSD: a.CostUSD, LatencyMS: a.Latency.Milliseconds()}
}

// payer is whom a model call of the turn is charged to (R-X-5): the
// agent, the conversation with its cap, and the conversation that
// delegated it.
func (t *Turn) payer(s snapshotOf, runID string, step int) llm.Payer {
	p := llm.Payer{Agent: t.agent.ID, Conversation: t.conv.ID(), RunID: runID, Step: step, CapUSD: s.budget}
	if s.parent != "" {
		p.Ancestors = []string{s.parent}
	}
	return p
}
