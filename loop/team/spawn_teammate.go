package team

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

//go:embed spawn_teammate.md
var spawnTeammateDoc string

// spawnTeammate is spawn_teammate: a confirmed member joins the team with
// its own conversation; a task_id is claimed for it first, and a failed
// claim spawns nothing (seed 001 §2).
type spawnTeammate struct{ r *Runtime }

type spawnArgs struct {
	Name        string `json:"name" jsonschema:"a name from the owner's confirmed proposal"`
	Agent       string `json:"agent,omitempty" jsonschema:"the agent profile; default: the one the proposal named"`
	TaskID      string `json:"task_id,omitempty" jsonschema:"a ready task to claim for it before it starts"`
	RequirePlan bool   `json:"require_plan,omitempty" jsonschema:"it must have its plan approved before running commands, writing or editing"`
}

func (spawnTeammate) Def() tools.Def {
	return tools.Def{Name: "spawn_teammate", Description: spawnTeammateDoc}
}

func (s spawnTeammate) Run(ctx context.Context, env tools.Env, a spawnArgs) (tools.Result, error) {
	t, err := s.r.lead(ctx, env)
	if err != nil {
		return outcome("", err)
	}
	var dir string
	_, err = t.AppendBoard(ctx, func(b *Board, _ *Mailboxes) ([]events.Event, error) {
		conf, ok := b.Confirmed[a.Name]
		if !ok {
			return nil, refuse("Not spawned: %q is not in a team proposal the owner confirmed in this conversation. Propose the team first (propose_team) and wait for the confirmation.", a.Name)
		}
		agent := conf.Agent
		if a.Agent != "" && a.Agent != agent {
			return nil, refuse("Not spawned: the owner confirmed %s to run agent %s, not %s.", a.Name, agent, a.Agent)
		}
		if _, ok := s.r.cfg.Crew.Agent(agent); !ok {
			return nil, refuse("Not spawned: agent %s is not loaded.", agent)
		}
		if m := b.Members[a.Name]; m != nil && m.Conversation != "" && !m.Stopped {
			return nil, refuse("Not spawned: %s is already on the team (send_message to give it work).", a.Name)
		}
		// The claim is stored first: a pass that runs between the two
		// appends sees no member yet, so it cannot give it another task.
		var evs []events.Event
		if a.TaskID != "" {
			if why := b.claimRefusal(a.TaskID, a.Name); why != "" {
				return nil, refuse("Not spawned, because its task could not be claimed: %s", why)
			}
			d, why := s.r.taskDir(b, b.Tasks[a.TaskID])
			if why != "" {
				return nil, refuse("Not spawned, because its task could not be claimed: %s", why)
			}
			dir = d
			evs = append(evs, &events.TaskClaimed{TaskID: a.TaskID, Owner: a.Name, How: "spawn"})
		}
		return append(evs, &events.TeammateSpawned{Name: a.Name, Agent: agent, Conversation: MemberConversation(t.ID(), a.Name),
			Responsibility: conf.Responsibility, RequirePlan: a.RequirePlan}), nil
	})
	if err != nil {
		return outcome("", err)
	}
	s.r.learn(t)
	conv := MemberConversation(t.ID(), a.Name)
	if a.TaskID != "" {
		s.r.setLease(conv, a.TaskID, dir)
	}
	s.r.kickAfter(t)
	text := fmt.Sprintf("Spawned %s. ", a.Name)
	if a.TaskID != "" {
		text += fmt.Sprintf("It claimed %s (working folder %s). ", a.TaskID, dir)
	} else {
		text += "It has no task yet: it waits idle and claims the next ready one. "
	}
	return outcome(text+"When you have spawned the team, end your turn: the runtime starts your next turn when team events arrive.", nil)
}
