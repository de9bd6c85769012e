package team

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed review_plan.md
var reviewPlanDoc string

// reviewPlan is review_plan: the lead's plan_approval_response. Only a
// pending plan_approval_request can be answered, once.
type reviewPlan struct{ r *Runtime }

func (reviewPlan) Def() tools.Def {
	return tools.Def{Name: "review_plan", Description: reviewPlanDoc}
}

type reviewArgs struct {
	RequestID string `json:"request_id"`
	Approve   bool   `json:"approve"`
	Feedback  string `json:"feedback,omitempty"`
}

func (q reviewPlan) Run(ctx context.Context, env tools.Env, a reviewArgs) (tools.Result, error) {
	t, err := q.r.lead(ctx, env)
	if err != nil {
		return outcome("", err)
	}
	var to string
	t.View(ctx, func(_ *Board, mb *Mailboxes) {
		if p := mb.Requests[a.RequestID]; p != nil {
			to = p.From
		}
	})
	if to == "" {
		return outcome("", refuse("Not sent: there is no request %q.", a.RequestID))
	}
	status := events.ProtocolRejected
	if a.Approve {
		status = events.ProtocolApproved
	}
	_, err = t.Send(ctx, to, func(_ *Board, mb *Mailboxes) ([]events.Event, error) {
		p := mb.Requests[a.RequestID]
		switch {
		case p.Type != events.MailPlanApproval:
			return nil, refuse("Not sent: %s is a %s, not a plan_approval_request.", a.RequestID, p.Type)
		case p.Status != events.ProtocolPending:
			return nil, refuse("Not sent: %s was already answered (%s).", a.RequestID, p.Status)
		}
		return []events.Event{&events.MailSent{From: Lead, To: to, Type: events.MailPlanResponse, RequestID: a.RequestID, Status: status, Content: a.Feedback}}, nil
	})
	return outcome(fmt.Sprintf("Sent plan_approval_response %s (%s) to %s.", a.RequestID, status, to), err)
}
