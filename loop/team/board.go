package team

import (
	"fmt"
	"slices"

	"github.com/my-agent-crew/crew/events"
)

// Task is one task on the board.
type Task struct {
	ID          string
	Subject     string
	Description string
	Status      string // events.TaskPending, TaskInProgress, TaskDone
	Owner       string
	BlockedBy   []string
	Worktree    *Worktree
	Result      string
	// How is how its current owner got it (claim, auto, spawn).
	How string
}

// Worktree is a task's bound git worktree.
type Worktree struct {
	Name, Path, Branch string
}

// Member is one teammate on the roster.
type Member struct {
	Name           string
	Agent          string
	Conversation   string
	Responsibility string
	RequirePlan    bool
	Stopped        bool
	// WorkVersion counts the member's claims and releases: a plan approved
	// for an earlier version no longer counts (seed 001 §12).
	WorkVersion int
}

// Board is the fold of a team's scope (crew.team.<team>): the confirmed
// proposal, the tasks and the roster. It is a pure function of those
// events; decisions are made on it and appended with its Seq as the
// expectation, so a decision on a stale board is a conflict.
type Board struct {
	Team      string
	Seq       uint64
	Confirmed map[string]events.TeamMember
	Plan      string
	Tasks     map[string]*Task
	Order     []string // task ids in creation order
	Members   map[string]*Member
	Roster    []string // member names in spawn order
	// Removed names the worktrees the host removed (a name is not reused).
	Removed map[string]bool
	// Halt is the owner's last stop of the whole team, nil for none: the
	// team is held while the lead has not run since (Runtime.held).
	Halt *events.TeamStopRequested
}

func newBoard(team string) *Board {
	return &Board{Team: team, Confirmed: map[string]events.TeamMember{}, Tasks: map[string]*Task{},
		Members: map[string]*Member{}, Removed: map[string]bool{}}
}

// Apply folds one event of the team's scope.
func (b *Board) Apply(env events.Envelope) error {
	if env.Seq != 0 && env.Seq <= b.Seq {
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		return err
	}
	switch e := e.(type) {
	case *events.TeamConfirmed:
		for _, m := range e.Members {
			b.Confirmed[m.Name] = m
		}
		b.Plan = e.Plan
	case *events.TaskCreated:
		if b.Tasks[e.TaskID] == nil {
			b.Tasks[e.TaskID] = &Task{ID: e.TaskID, Subject: e.Subject, Description: e.Description, Status: events.TaskPending}
			b.Order = append(b.Order, e.TaskID)
		}
	case *events.TaskUpdated:
		if t := b.Tasks[e.TaskID]; t != nil {
			for _, id := range e.AddBlockedBy {
				if !slices.Contains(t.BlockedBy, id) {
					t.BlockedBy = append(t.BlockedBy, id)
				}
			}
			switch e.Status {
			case events.TaskPending:
				if t.Owner != "" {
					b.bump(t.Owner)
				}
				t.Status, t.Owner, t.How = events.TaskPending, "", ""
			case events.TaskDone:
				t.Status = events.TaskDone
			}
		}
	case *events.TaskClaimed:
		if t := b.Tasks[e.TaskID]; t != nil {
			t.Status, t.Owner, t.How = events.TaskInProgress, e.Owner, e.How
			b.bump(e.Owner)
		}
	case *events.TaskReleased:
		if t := b.Tasks[e.TaskID]; t != nil {
			t.Status, t.Owner, t.How = events.TaskPending, "", ""
			b.bump(e.Owner)
		}
	case *events.TaskCompleted:
		if t := b.Tasks[e.TaskID]; t != nil {
			t.Status, t.Result = events.TaskDone, e.Result
		}
	case *events.TaskWorktreeBound:
		if t := b.Tasks[e.TaskID]; t != nil {
			t.Worktree = &Worktree{Name: e.Name, Path: e.Path, Branch: e.Branch}
		}
	case *events.TaskWorktreeRemoved:
		if t := b.Tasks[e.TaskID]; t != nil && t.Worktree != nil && t.Worktree.Name == e.Name {
			t.Worktree = nil
		}
		b.Removed[e.Name] = true
	case *events.TeammateSpawned:
		if !slices.Contains(b.Roster, e.Name) {
			b.Roster = append(b.Roster, e.Name)
		}
		if b.Members[e.Name] == nil {
			b.Members[e.Name] = &Member{}
		}
		m := b.Members[e.Name]
		v := m.WorkVersion
		*m = Member{Name: e.Name, Agent: e.Agent, Conversation: e.Conversation, Responsibility: e.Responsibility, RequirePlan: e.RequirePlan, WorkVersion: v}
	case *events.TeammateStopped:
		if m := b.Members[e.Name]; m != nil {
			m.Stopped = true
		}
	case *events.TeamStopRequested:
		h := *e
		b.Halt = &h
	}
	if env.Seq != 0 {
		b.Seq = env.Seq
	}
	return nil
}

func (b *Board) bump(owner string) {
	if m := b.Members[owner]; m != nil {
		m.WorkVersion++
		return
	}
	// The claim of a spawn is stored before the spawn itself.
	b.Members[owner] = &Member{Name: owner, WorkVersion: 1}
}

// Current is the task the member has in progress, if any.
func (b *Board) Current(owner string) *Task {
	for _, id := range b.Order {
		if t := b.Tasks[id]; t.Status == events.TaskInProgress && t.Owner == owner {
			return t
		}
	}
	return nil
}

// Blockers are the task's blockers not completed yet.
func (b *Board) Blockers(t *Task) []string {
	var open []string
	for _, id := range t.BlockedBy {
		if bt := b.Tasks[id]; bt == nil || bt.Status != events.TaskDone {
			open = append(open, id)
		}
	}
	return open
}

// Ready is the pending, unowned, unblocked tasks, in creation order: a
// snapshot, to claim from (seed 001 §7).
func (b *Board) Ready() []*Task {
	var out []*Task
	for _, id := range b.Order {
		t := b.Tasks[id]
		if t.Status == events.TaskPending && t.Owner == "" && len(b.Blockers(t)) == 0 {
			out = append(out, t)
		}
	}
	return out
}

// claimRefusal says why owner may not claim task id now, or "".
func (b *Board) claimRefusal(id, owner string) string {
	t := b.Tasks[id]
	switch {
	case t == nil:
		return fmt.Sprintf("There is no task %q on the board (list_tasks shows them).", id)
	case t.Status != events.TaskPending || t.Owner != "":
		return fmt.Sprintf("Task %s is no longer available (%s, owner %s).", id, t.Status, ownerOr(t.Owner))
	}
	if cur := b.Current(owner); cur != nil {
		return fmt.Sprintf("You must complete your current task %s first (complete_task).", cur.ID)
	}
	if open := b.Blockers(t); len(open) > 0 {
		return fmt.Sprintf("Task %s is blocked by %v, not completed yet.", id, open)
	}
	return ""
}

// cycle reports whether task id blocked by by would close a cycle.
func (b *Board) cycle(id, by string) bool {
	seen := map[string]bool{}
	var reaches func(from string) bool
	reaches = func(from string) bool { // does from depend on id?
		if from == id {
			return true
		}
		if seen[from] {
			return false
		}
		seen[from] = true
		if t := b.Tasks[from]; t != nil {
			return slices.ContainsFunc(t.BlockedBy, reaches)
		}
		return false
	}
	return reaches(by)
}

func ownerOr(o string) string {
	if o == "" {
		return "none"
	}
	return o
}
