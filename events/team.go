package events

// Team events (R-TEAM, seed 001). A team belongs to its lead's
// conversation: the team's id is that conversation's id. Two kinds of
// scope carry it:
//
//   - crew.team.<team>: the board and the roster — the owner's confirmed
//     proposal, tasks and their claims, worktree bindings, teammates
//     spawned and stopped. Every write expects the scope's last sequence,
//     so a claim is a compare-and-set: of concurrent claimants one wins.
//   - crew.mail.<team>.<member>: one mailbox per member ("lead" is the
//     lead's). Anyone on the team may send; a send expects the mailbox's
//     last sequence, so one sender's results and idle notification stay
//     in order and a retried send is stored once.
const (
	TypeTeamConfirmed      = "team_confirmed"
	TypeTaskCreated        = "task_created"
	TypeTaskUpdated        = "task_updated"
	TypeTaskClaimed        = "task_claimed"
	TypeTaskReleased       = "task_released"
	TypeTaskCompleted      = "task_completed"
	TypeTaskWorktreeBound  = "task_worktree_bound"
	TypeTaskWorktreeRemove = "task_worktree_removed"
	TypeTeammateSpawned    = "teammate_spawned"
	TypeTeammateStopped    = "teammate_stopped"
	TypeTeamStopRequested  = "team_stop_requested"
	TypeMailSent           = "mail_sent"
)

func init() {
	register[TeamConfirmed]()
	register[TaskCreated]()
	register[TaskUpdated]()
	register[TaskClaimed]()
	register[TaskReleased]()
	register[TaskCompleted]()
	register[TaskWorktreeBound]()
	register[TaskWorktreeRemoved]()
	register[TeammateSpawned]()
	register[TeammateStopped]()
	register[TeamStopRequested]()
	register[MailSent]()
}

// Team is the scope of one team's board and roster.
func Team(id string) Scope { return Scope(Root + ".team." + id) }

// Mail is the scope of one member's mailbox ("lead" for the lead).
func Mail(team, member string) Scope { return Scope(Root + ".mail." + team + "." + member) }

// MailOf is the filter of every mailbox of a team.
func MailOf(team string) string { return Root + ".mail." + team + ".>" }

// TeamMember is one member of a proposed team.
type TeamMember struct {
	Name           string `json:"name"`
	Agent          string `json:"agent"`
	Responsibility string `json:"responsibility"`
}

// TeamConfirmed is a propose_team call the owner approved: the names in it
// may be spawned in this team. Recorded by the call itself, after the
// approval.
type TeamConfirmed struct {
	ProposalID string       `json:"proposal_id"`
	Members    []TeamMember `json:"members"`
	Plan       string       `json:"plan"`
}

func (*TeamConfirmed) EventType() string { return TypeTeamConfirmed }
func (*TeamConfirmed) EventVersion() int { return 1 }

// Task statuses on the board.
const (
	TaskPending    = "pending"
	TaskInProgress = "in_progress"
	TaskDone       = "completed"
)

// TaskCreated adds a task to the board, pending and unowned.
type TaskCreated struct {
	TaskID      string `json:"task_id"`
	Subject     string `json:"subject"`
	Description string `json:"description,omitempty"`
}

func (*TaskCreated) EventType() string { return TypeTaskCreated }
func (*TaskCreated) EventVersion() int { return 1 }

// TaskUpdated is the lead's change to the graph: blockers added, and a
// status set (pending releases an owner; completed closes it unowned).
type TaskUpdated struct {
	TaskID       string   `json:"task_id"`
	AddBlockedBy []string `json:"add_blocked_by,omitempty"`
	Status       string   `json:"status,omitempty"`
}

func (*TaskUpdated) EventType() string { return TypeTaskUpdated }
func (*TaskUpdated) EventVersion() int { return 1 }

// TaskClaimed makes a pending, ready task the owner's, in progress. How:
// "claim" (claim_task), "auto" (an idle teammate took it), "spawn"
// (spawn_teammate's task_id).
type TaskClaimed struct {
	TaskID string `json:"task_id"`
	Owner  string `json:"owner"`
	How    string `json:"how"`
}

func (*TaskClaimed) EventType() string { return TypeTaskClaimed }
func (*TaskClaimed) EventVersion() int { return 1 }

// TaskReleased returns an in-progress task to the board, pending and
// unowned: the lead set it pending, or its owner stopped.
type TaskReleased struct {
	TaskID string `json:"task_id"`
	Owner  string `json:"owner"`
	Reason string `json:"reason"`
}

func (*TaskReleased) EventType() string { return TypeTaskReleased }
func (*TaskReleased) EventVersion() int { return 1 }

// TaskCompleted is the owner's completion of its in-progress task.
type TaskCompleted struct {
	TaskID string `json:"task_id"`
	Owner  string `json:"owner"`
	Result string `json:"result"`
}

func (*TaskCompleted) EventType() string { return TypeTaskCompleted }
func (*TaskCompleted) EventVersion() int { return 1 }

// TaskWorktreeBound binds a pending, unowned task to a git worktree the
// lead created: Path is the checkout (absolute), Branch "wt/<name>".
type TaskWorktreeBound struct {
	TaskID string `json:"task_id"`
	Name   string `json:"name"`
	Path   string `json:"path"`
	Branch string `json:"branch"`
}

func (*TaskWorktreeBound) EventType() string { return TypeTaskWorktreeBound }
func (*TaskWorktreeBound) EventVersion() int { return 1 }

// TaskWorktreeRemoved records that the host removed a task's worktree (the
// checkout is gone; the branch is kept). Discarded says changes were
// thrown away on the owner's explicit --discard.
type TaskWorktreeRemoved struct {
	TaskID    string `json:"task_id"`
	Name      string `json:"name"`
	Discarded bool   `json:"discarded,omitempty"`
}

func (*TaskWorktreeRemoved) EventType() string { return TypeTaskWorktreeRemove }
func (*TaskWorktreeRemoved) EventVersion() int { return 1 }

// TeammateSpawned adds a member to the team: its name, the agent profile
// it runs and its own conversation. RequirePlan turns on the plan gate.
type TeammateSpawned struct {
	Name           string `json:"name"`
	Agent          string `json:"agent"`
	Conversation   string `json:"conversation"`
	Responsibility string `json:"responsibility,omitempty"`
	RequirePlan    bool   `json:"require_plan,omitempty"`
}

func (*TeammateSpawned) EventType() string { return TypeTeammateSpawned }
func (*TeammateSpawned) EventVersion() int { return 1 }

// TeammateStopped ends a member's loop: its shutdown was approved.
type TeammateStopped struct {
	Name      string `json:"name"`
	RequestID string `json:"request_id,omitempty"`
}

func (*TeammateStopped) EventType() string { return TypeTeammateStopped }
func (*TeammateStopped) EventVersion() int { return 1 }

// TeamStopRequested is the owner's stop of a whole team (issue 27): stored
// before every member's current turn and the lead's are stopped, it holds
// the team — no mail delivered, no task given or claimed — until the
// owner writes to the lead again: LeadMessages is the length of the lead's
// history at the stop, and an owner's message after it lets the team go.
type TeamStopRequested struct {
	By           string `json:"by"`
	LeadMessages int    `json:"lead_messages"`
}

func (*TeamStopRequested) EventType() string { return TypeTeamStopRequested }
func (*TeamStopRequested) EventVersion() int { return 1 }

// Mail types. A plain message, a teammate's report, and the typed control
// messages of the protocols (seed 001 §11, §12): a request carries a fresh
// request_id; its response names it and carries a status.
const (
	MailMessage          = "message"
	MailResult           = "result"
	MailIdle             = "idle_notification"
	MailShutdownRequest  = "shutdown_request"
	MailShutdownResponse = "shutdown_response"
	MailPlanRequest      = "plan_request"
	MailPlanApproval     = "plan_approval_request"
	MailPlanResponse     = "plan_approval_response"
)

// Protocol statuses.
const (
	ProtocolPending  = "pending"
	ProtocolApproved = "approved"
	ProtocolRejected = "rejected"
)

// MailSent is one message in a member's mailbox.
type MailSent struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Type    string `json:"type"`
	Content string `json:"content"`
	// RequestID ties a control message to its request; Status is a
	// response's answer (approved, rejected).
	RequestID string `json:"request_id,omitempty"`
	Status    string `json:"status,omitempty"`
	// TaskID and WorkVersion are what a plan was written for: a plan
	// approved for another version of the member's work does not count.
	TaskID      string `json:"task_id,omitempty"`
	WorkVersion int    `json:"work_version,omitempty"`
	// RunID is the teammate run a result or an idle notification reports.
	Run string `json:"run_id,omitempty"`
}

func (*MailSent) EventType() string { return TypeMailSent }
func (*MailSent) EventVersion() int { return 1 }

// TeamDelivery is mail the runtime delivered into a member's (or the
// lead's) conversation, as one message: the model reads it framed as
// "[Team events]", never as the owner's words. Through is the mailbox's
// last sequence delivered; Assigned is the task the delivery assigns.
type TeamDelivery struct {
	Through  uint64     `json:"through,omitempty"`
	Items    []TeamItem `json:"items"`
	Assigned string     `json:"assigned,omitempty"`
}

// TeamItem is one delivered message, or an assignment ("assigned",
// "auto_claimed").
type TeamItem struct {
	From      string `json:"from"`
	Type      string `json:"type"`
	Content   string `json:"content"`
	RequestID string `json:"request_id,omitempty"`
	Status    string `json:"status,omitempty"`
	TaskID    string `json:"task_id,omitempty"`
}
