package team

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed list_teammates.md
var listTeammatesDoc string

// listTeammates is list_teammates: the roster with each member's state.
type listTeammates struct{ r *Runtime }

func (listTeammates) Def() tools.Def {
	return tools.Def{Name: "list_teammates", Description: listTeammatesDoc}
}

func (l listTeammates) Run(ctx context.Context, env tools.Env, _ noArgs) (tools.Result, error) {
	t, _, err := l.r.anyone(ctx, env)
	if err != nil {
		return outcome("", err)
	}
	rows, err := l.r.Members(ctx, t)
	if err != nil {
		return outcome("", err)
	}
	if len(rows) == 0 {
		return outcome("No teammates yet.", nil)
	}
	var b strings.Builder
	for _, m := range rows {
		fmt.Fprintf(&b, "%s (agent %s): %s", m.Name, m.Agent, m.State)
		if m.Task != "" {
			fmt.Fprintf(&b, ", task %s", m.Task)
		}
		if m.Plan != PlanNotRequired {
			fmt.Fprintf(&b, ", plan %s", m.Plan)
		}
		if m.Responsibility != "" {
			fmt.Fprintf(&b, " — %s", m.Responsibility)
		}
		b.WriteString("\n")
	}
	return outcome(strings.TrimSpace(b.String()), nil)
}

// Member states as the roster shows them.
const (
	StateWork    = view.StateWork
	StateIdle    = view.StateIdle
	StateStopped = view.StateStopped
)

// MemberRow is a member as the roster and the team page show it.
type MemberRow = view.TeamMember

// Members lists the team's members with their WORK/IDLE state.
func (r *Runtime) Members(ctx context.Context, t *Team) ([]MemberRow, error) {
	var rows []MemberRow
	err := t.View(ctx, func(b *Board, mb *Mailboxes) {
		for _, name := range b.Roster {
			m := b.Members[name]
			row := MemberRow{Name: m.Name, Agent: m.Agent, Responsibility: m.Responsibility, Conversation: m.Conversation, Plan: planStatus(b, mb, name)}
			if c := b.Current(name); c != nil {
				row.Task = c.ID
			}
			if m.Stopped {
				row.State = StateStopped
			}
			rows = append(rows, row)
		}
	})
	if err != nil {
		return nil, err
	}
	for i := range rows {
		if rows[i].State != "" {
			continue
		}
		rows[i].State = StateIdle
		conv, err := r.cfg.Convs.Get(ctx, rows[i].Conversation)
		if err != nil {
			return nil, err
		}
		conv.View(func(st *loop.State) {
			if st.OpenRun != "" || len(st.Queued) > 0 {
				rows[i].State = StateWork
			}
		})
	}
	return rows, nil
}
