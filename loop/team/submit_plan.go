package team

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed submit_plan.md
var submitPlanDoc string

// submitPlan is submit_plan: a member's plan_approval_request, written for
// its current task and work version.
type submitPlan struct{ r *Runtime }

func (submitPlan) Def() tools.Def {
	return tools.Def{Name: "submit_plan", Description: submitPlanDoc}
}

type submitArgs struct {
	Plan string `json:"plan"`
}

func (s submitPlan) Run(ctx context.Context, env tools.Env, a submitArgs) (tools.Result, error) {
	if strings.TrimSpace(a.Plan) == "" {
		return outcome("", refuse("Not sent: the plan is empty."))
	}
	t, seat, err := s.r.member(ctx, env)
	if err != nil {
		return outcome("", err)
	}
	id := newID("req_")
	_, err = t.Send(ctx, Lead, func(b *Board, mb *Mailboxes) ([]events.Event, error) {
		m := b.Members[seat.Member]
		if m == nil {
			return nil, refuse("Not sent: you are not on the board's roster.")
		}
		if p := mb.Pending(events.MailPlanApproval, Lead); p != nil && p.From == seat.Member && p.WorkVersion == m.WorkVersion {
			return nil, refuse("Not sent: your plan %s is still waiting for the lead.", p.ID)
		}
		var task string
		if c := b.Current(seat.Member); c != nil {
			task = c.ID
		}
		return []events.Event{&events.MailSent{From: seat.Member, To: Lead, Type: events.MailPlanApproval, Content: a.Plan, RequestID: id,
			TaskID: task, WorkVersion: m.WorkVersion}}, nil
	})
	return outcome(fmt.Sprintf("Sent plan_approval_request %s to the lead. Until it is approved your commands, writes and edits stay blocked; end your turn, and the answer arrives as team events.", id), err)
}
