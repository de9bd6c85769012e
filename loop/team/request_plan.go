package team

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed request_plan.md
var requestPlanDoc string

// requestPlan is request_plan: the plan gate for a running teammate.
type requestPlan struct{ r *Runtime }

func (requestPlan) Def() tools.Def {
	return tools.Def{Name: "request_plan", Description: requestPlanDoc}
}

type requestPlanArgs struct {
	Name    string `json:"name"`
	Content string `json:"content,omitempty" jsonschema:"what the plan should cover"`
}

func (q requestPlan) Run(ctx context.Context, env tools.Env, a requestPlanArgs) (tools.Result, error) {
	t, err := q.r.lead(ctx, env)
	if err != nil {
		return outcome("", err)
	}
	id, err := q.r.request(ctx, t, events.MailPlanRequest, a.Name, cmp.Or(a.Content, "Send your plan (submit_plan) before running commands, writing or editing."))
	return outcome(fmt.Sprintf("Sent plan_request %s to %s: until you approve its plan (review_plan), its commands, writes and edits are blocked.", id, a.Name), err)
}
