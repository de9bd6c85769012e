package team

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed propose_team.md
var proposeTeamDoc string

// proposeTeam is propose_team: the lead proposes members and a plan; the
// call always asks, and the owner's approval of its card is the
// confirmation spawn_teammate needs (seed 001 §1).
type proposeTeam struct{ r *Runtime }

type proposeArgs struct {
	Members []proposeMember `json:"members" schema:"minItems=1,maxItems=8"`
	Plan    string          `json:"plan" jsonschema:"how the work is divided, in a few lines"`
}

// proposeMember is one proposed teammate: an events.TeamMember, field for
// field, with what the model is told of each.
type proposeMember struct {
	Name           string `json:"name" jsonschema:"the teammate's name, e.g. alice (a-z, 0-9, _ and -)"`
	Agent          string `json:"agent" jsonschema:"the agent profile it runs: one of the crew, or your own id"`
	Responsibility string `json:"responsibility" jsonschema:"what it is responsible for"`
}

// members are a's members as the board records them.
func (a proposeArgs) members() []events.TeamMember {
	out := make([]events.TeamMember, len(a.Members))
	for i, m := range a.Members {
		out[i] = events.TeamMember(m)
	}
	return out
}

func (proposeTeam) Def() tools.Def {
	return tools.Def{Name: "propose_team", Description: proposeTeamDoc}
}

// NeedsApproval: starting teammates changes who may edit the workspace.
func (proposeTeam) NeedsApproval() bool { return true }

// AskWhen always asks: the approval is the owner's confirmation.
func (p proposeTeam) AskWhen(env tools.Env, a proposeArgs) string {
	var b strings.Builder
	b.WriteString("propose_team always asks: approve to confirm this team (its members may then be spawned).")
	for _, m := range a.Members {
		fmt.Fprintf(&b, "\n- %s (agent %s): %s", m.Name, m.Agent, m.Responsibility)
	}
	if a.Plan != "" {
		b.WriteString("\nPlan: " + a.Plan)
	}
	return b.String()
}

// Check refuses a proposal that could not be confirmed, before asking.
func (p proposeTeam) Check(env tools.Env, a proposeArgs) error {
	_, err := p.valid(env, a)
	return err
}

func (p proposeTeam) valid(env tools.Env, a proposeArgs) (proposeArgs, error) {
	a.Members = slices.Clone(a.Members) // valid fills in a default agent
	if p.r.cfg.Crew == nil {
		return a, refuse("Not run: teams do not run here.")
	}
	if len(a.Members) == 0 || len(a.Members) > 8 {
		return a, refuse("Not run: propose 1 to 8 members.")
	}
	seen := map[string]bool{}
	for i, m := range a.Members {
		if err := checkName("name", m.Name); err != nil {
			return a, &Refusal{Text: err.Error()}
		}
		if seen[m.Name] {
			return a, refuse("Not run: the name %q is proposed twice.", m.Name)
		}
		seen[m.Name] = true
		if m.Agent == "" {
			a.Members[i].Agent = env.AgentID
		} else if _, ok := p.r.cfg.Crew.Agent(m.Agent); !ok {
			return a, refuse("Not run: there is no agent %q in the crew for %s; use one of the crew or your own id (%s).", m.Agent, m.Name, env.AgentID)
		}
		if strings.TrimSpace(m.Responsibility) == "" {
			return a, refuse("Not run: give %s a responsibility.", m.Name)
		}
	}
	return a, nil
}

func (p proposeTeam) Run(ctx context.Context, env tools.Env, a proposeArgs) (tools.Result, error) {
	a, err := p.valid(env, a)
	if err != nil {
		return outcome("", err)
	}
	t, err := p.r.lead(ctx, env)
	if err != nil {
		return outcome("", err)
	}
	_, err = t.AppendBoard(ctx, func(*Board, *Mailboxes) ([]events.Event, error) {
		return []events.Event{&events.TeamConfirmed{ProposalID: newID("prop_"), Members: a.members(), Plan: a.Plan}}, nil
	})
	names := make([]string, len(a.Members))
	for i, m := range a.Members {
		names[i] = m.Name
	}
	return outcome(fmt.Sprintf("The owner confirmed the team: %s. Now create every task (create_task), link them (update_task addBlockedBy), then spawn the teammates (spawn_teammate with a task_id) and end your turn.", strings.Join(names, ", ")), err)
}
