package loop

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed compact.md
var compactDescription string

// CompactTool is the model's own request for compaction (seed 004's
// compact): the history before the open step — the earlier turns and the
// run's earlier steps — is summarised now, so the next step's request
// reads the summaries, and the result says how many tokens that freed.
// It needs no approval: it changes what the model reads, never the log.
const CompactTool = "compact"

type compactTool struct{}

func (compactTool) Def() tools.Def {
	return tools.Def{Name: CompactTool, Description: strings.TrimSpace(compactDescription), Default: true,
		Params: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)}
}

func (compactTool) Run(context.Context, tools.Env, json.RawMessage) (tools.Result, error) {
	return tools.Result{}, fmt.Errorf("compact is answered by the turn")
}

func (compactTool) traits() traits { return traits{} }

func (compactTool) vet(*Turn, events.ToolCallRequest) (string, string, bool) { return "", "", false }

func (compactTool) answer(ctx context.Context, t *Turn, c *toolCall) (tools.Result, error) {
	s := t.read()
	route := t.currentRoute()
	if route == "" {
		return tools.Failf("compact: the agent has no model routes"), nil
	}
	// The open step is the reply that holds this call.
	open := -1
	for i := len(s.messages) - 1; i >= 0; i-- {
		if m := s.messages[i]; m.Role == RoleAssistant && hasCall(m, c.ID) {
			open = i
			break
		}
	}
	if open < 0 {
		return tools.Failf("compact: this call's step is not in the history"), nil
	}
	system := t.sentSystem
	sc := &stepCall{t: t, s: s, step: c.step, system: system, defs: t.toolDefs(ctx, s.child), payer: t.payer(s, s.openRun, c.step)}
	sc.defsBytes = t.defsBytes(sc.defs)
	before := sc.size(route)
	cur := before
	var stages []string
	stage := func(e *events.ContextCompacted) error {
		e.RunID, e.Step, e.Before, e.Limit, e.CallID = s.openRun, c.step, cur, cur, c.ID
		sc.s.comp.apply(e)
		e.After = sc.size(route)
		cur = e.After
		stages = append(stages, e.Stage)
		return t.emit(ctx, e)
	}
	e, err := sc.runSummary(ctx, route, open)
	if err != nil {
		return tools.Result{}, err
	}
	if e != nil {
		if err := stage(e); err != nil {
			return tools.Result{}, err
		}
	}
	e, err = sc.summary(ctx, route, 1<<40, 0, s.runFrom, false)
	if err != nil {
		return tools.Result{}, err
	}
	if e != nil {
		if err := stage(e); err != nil {
			return tools.Result{}, err
		}
	}
	if len(stages) == 0 {
		return tools.Result{Output: fmt.Sprintf("Nothing to compact: the history before this step has nothing left to summarise (the request holds about %d tokens).", before)}, nil
	}
	return tools.Result{Output: fmt.Sprintf("Compacted (%s): the history before this step is summarised, about %d tokens freed (%d → %d). Your next step reads the summary; tool_output_read brings back any result by its call id.",
		strings.Join(stages, ", "), max(before-cur, 0), before, cur)}, nil
}

func hasCall(m Message, id string) bool {
	for _, c := range m.ToolCalls {
		if c.ID == id {
			return true
		}
	}
	return false
}

// currentRoute is the route the turn's next step goes to first.
func (t *Turn) currentRoute() string {
	if t.escalated && t.agent.EscalationRoute != "" {
		return t.agent.EscalationRoute
	}
	if len(t.agent.Routes) > 0 {
		return t.agent.Routes[0]
	}
	return ""
}
