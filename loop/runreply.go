package loop

import (
	"encoding/json"

	"github.com/my-agent-crew/crew/events"
)

// RunReply folds, from a run's events, what a channel tells the owner when
// the run ends (the Telegram gateway, the crew's MCP server): the run's
// last in-turn text, its known model cost (delegates included), the calls
// whose cost was not reported, and the question its last reply asked with
// ask_user. Fold RunStarted, ModelCalled and ToolCompleted in order.
type RunReply struct {
	Text     string
	CostUSD  float64
	Unknown  int
	Question string
}

// Fold adds one event of the run; RunStarted starts afresh.
func (r *RunReply) Fold(e events.Event) {
	switch e := e.(type) {
	case *events.RunStarted:
		*r = RunReply{}
	case *events.ModelCalled:
		if e.InTurn() && e.Error == "" && e.Text != "" {
			r.Text = e.Text
		}
		switch {
		case e.CostUSD != nil:
			r.CostUSD += *e.CostUSD
		case e.Error == "": // a failed call cost nothing we know of
			r.Unknown++
		}
		if e.InTurn() && e.Error == "" {
			r.Question = askedUser(e.ToolCalls)
		}
	case *events.ToolCompleted:
		if d := e.Delegate; d != nil {
			if d.CostUSD != nil {
				r.CostUSD += *d.CostUSD
			}
			r.Unknown += d.UnknownCostCalls
		}
	}
}

// Ending is how the run that finished with e ended, with what was folded.
func (r *RunReply) Ending(e *events.RunFinished) Ending {
	return Ending{Status: e.Status, Reason: e.Reason, Error: e.Error, By: e.By, CostUSD: r.CostUSD, UnknownCostCalls: r.Unknown,
		Replied: r.Text != "", Question: r.Question}
}

// askedUser is the question of an ask_user call among calls ("" if none).
func askedUser(calls []events.ToolCallRequest) string {
	for _, c := range calls {
		var q struct {
			Question string `json:"question"`
		}
		if c.Name == "ask_user" && json.Unmarshal(c.Arguments, &q) == nil {
			return q.Question
		}
	}
	return ""
}
