package team

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools"
)

// The tools of each seat. The lead's come from its agent.yaml (team:
// lead); a member gets the board's, whatever its profile lists, and none
// of the lead's.
var (
	LeadTools = []string{"propose_team", "spawn_teammate", "list_teammates", "create_task", "update_task", "list_tasks", "get_task",
		"send_message", "create_worktree", "request_shutdown", "request_plan", "review_plan"}
	MemberTools = []string{"list_tasks", "get_task", "claim_task", "update_task", "complete_task", "send_message", "list_teammates", "submit_plan"}
)

// Grant is what leading teams gives an agent (leads: agent.yaml's team:
// lead, or the master unless team: none): the lead's tools.
func Grant(leads bool) tools.Grant {
	if !leads {
		return tools.Grant{}
	}
	return tools.Grant{Names: LeadTools}
}

// Leads reports whether an agent's tools make it a lead.
func Leads(a loop.Agent) bool { return slices.Contains(a.Tools, "spawn_teammate") }

// Seated implements loop.Teams.
func (r *Runtime) Seated(a loop.Agent, seat loop.Seat) (loop.Agent, bool) {
	if seat.Member == "" && seat.Child {
		a.Tools = slices.DeleteFunc(slices.Clone(a.Tools), func(n string) bool { return slices.Contains(LeadTools, n) })
		return a, false
	}
	if seat.Member == "" {
		return a, Leads(a) && seat.Conversation == seat.Team
	}
	names := slices.DeleteFunc(slices.Clone(a.Tools), func(n string) bool {
		return slices.Contains(LeadTools, n) || slices.Contains(loop.MemberRefused, n)
	})
	for _, n := range MemberTools {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	a.Tools = names
	return a, true
}

// workspaceTool: the tools that need a claimed task's folder; planGated:
// those the plan gate blocks (seed 001 §9, §12).
func workspaceTool(name string) bool {
	return strings.HasPrefix(name, "workspace_") || name == "shell_run"
}
func planGated(name string) bool {
	return name == "shell_run" || name == "workspace_write" || name == "workspace_edit"
}

// Workdir implements loop.Teams: the member's claimed task's folder — kept
// until the member is idle again, rebuilt after a restart from the task's
// owner and binding — or why a workspace or shell tool may not run.
func (r *Runtime) Workdir(seat loop.Seat, tool string) (dir, refusal string) {
	if seat.Member == "" {
		return "", ""
	}
	ctx, cancel := context.WithTimeout(r.ctx, waitTimeout)
	defer cancel()
	t, err := r.Team(ctx, seat.Team)
	if err != nil {
		return "", "Blocked: the team's board could not be read (" + err.Error() + "); nothing was run."
	}
	r.mu.Lock()
	l, leased := r.leases[seat.Conversation]
	r.mu.Unlock()
	var status string
	var cur *Task
	var bad string
	t.View(ctx, func(b *Board, mb *Mailboxes) {
		status = planStatus(b, mb, seat.Member)
		if c := b.Current(seat.Member); c != nil {
			cp := *c
			cur = &cp
			if !leased || l.task != c.ID {
				// No lease here (a restart) or a stale one: rebuild it
				// from the durable owner and binding, failing closed.
				d, why := r.taskDir(b, c)
				if why != "" {
					bad = why
					return
				}
				l, leased = lease{task: c.ID, dir: d}, true
			}
		}
	})
	switch {
	case bad != "":
		return "", bad
	case cur != nil:
		r.setLease(seat.Conversation, l.task, l.dir)
	}
	if !leased {
		if workspaceTool(tool) {
			return "", "Not run: you have no claimed task, so you have no working folder. Claim one first with claim_task (list_tasks shows the ready ones); workspace and shell tools work in its folder."
		}
		return "", ""
	}
	if planGated(tool) && status != PlanNotRequired && status != PlanApproved {
		return l.dir, fmt.Sprintf("Blocked: plan status is %s. Send your plan with submit_plan and wait for the lead's approval; until then you may read files but not run commands, write or edit.", status)
	}
	return l.dir, ""
}

// taskDir is the folder a task is worked in: its worktree, checked to
// still be one, or the team's workspace (the lead's).
func (r *Runtime) taskDir(b *Board, t *Task) (dir, refusal string) {
	if wt := t.Worktree; wt != nil {
		fi, err := os.Stat(filepath.Join(wt.Path, ".git"))
		if err != nil || fi.IsDir() {
			return "", fmt.Sprintf("Blocked: task %s is bound to worktree %s at %s, which is missing or is not a git worktree; nothing was run. Tell the lead (send_message).", t.ID, wt.Name, wt.Path)
		}
		return wt.Path, ""
	}
	ws := r.leadWorkspace(b.Team)
	if ws == "" {
		return "", fmt.Sprintf("Blocked: the team's workspace (its lead's) is not known, so task %s has no folder; nothing was run.", t.ID)
	}
	return ws, ""
}

// leadWorkspace is the workspace of the team's lead agent.
func (r *Runtime) leadWorkspace(team string) string {
	ctx, cancel := context.WithTimeout(r.ctx, waitTimeout)
	defer cancel()
	conv, err := r.cfg.Convs.Get(ctx, team)
	if err != nil {
		return ""
	}
	var agent string
	conv.View(func(st *loop.State) { agent = st.Agent })
	a, ok := r.cfg.Crew.Agent(agent)
	if !ok {
		return ""
	}
	return a.Workspace
}

// Prompt implements loop.Teams.
func (r *Runtime) Prompt(seat loop.Seat, a loop.Agent) string {
	if seat.Member == "" {
		return leadPrompt
	}
	ctx, cancel := context.WithTimeout(r.ctx, waitTimeout)
	defer cancel()
	var resp string
	var plan bool
	if t, err := r.Team(ctx, seat.Team); err == nil {
		t.View(ctx, func(b *Board, _ *Mailboxes) {
			if m := b.Members[seat.Member]; m != nil {
				resp, plan = m.Responsibility, m.RequirePlan
			}
		})
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "# Your team\n\nYou are %s, a teammate on a team run by its lead. ", seat.Member)
	if resp != "" {
		fmt.Fprintf(&sb, "Your responsibility: %s. ", resp)
	}
	sb.WriteString(memberPrompt)
	if plan {
		sb.WriteString("\n\nThe lead requires a plan: before you run commands, write or edit, send it with submit_plan and wait for the approval (it arrives as team events).")
	}
	return sb.String()
}

const leadPrompt = `# Leading a team

You can lead a team of persistent teammates on a shared task board. When parallel work would help, first propose a small team with clear responsibilities (propose_team) and wait for the user's confirmation: the user approves the proposal. Do not call spawn_teammate before the user confirms; it refuses names not in a confirmed proposal.

Build the task graph in two phases: call create_task for every task first, then link them with update_task(task_id, addBlockedBy=[...]) using the ids create_task returned. Only you change the graph. A task that needs its own checkout can get a git worktree (create_worktree) before anyone claims it. Then spawn the teammates, each with its first task_id.

After spawning, end your turn: do not poll list_tasks or list_teammates. The runtime starts your next turn when team events arrive (a teammate's result, its idle notification, a plan to review); they reach you framed as "[Team events …]", never as the user's words.`

const memberPrompt = `Your work comes from the shared task board: a task you claimed (claim_task, or the one the runtime assigned you) gives your workspace and shell tools their working folder; with no claimed task they do not run. Complete your current task (complete_task with the result) before claiming another; a blocked task cannot be claimed. Mail from the lead and your teammates arrives framed as "[Team events …]" — between your steps too, not only when you are idle; write to them with send_message (the lead is "lead"), see the board with list_tasks and get_task and the team with list_teammates. To give your task back unfinished, update_task with status pending; only the lead changes the graph. A shutdown request ends your turn at your next step. You cannot ask the user: when a call is refused for permission, tell the lead. Your last reply of a turn is sent to the lead as your result.`
