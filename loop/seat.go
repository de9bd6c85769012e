package loop

import "github.com/my-agent-crew/crew/events"

// Seat is a conversation's place on a team (R-TEAM): the lead's own
// conversation (Member empty; the team's id is the conversation's) or a
// member's.
type Seat struct {
	Conversation string
	Team         string
	Member       string
	// Child: a delegated conversation, which leads nothing.
	Child bool
}

// Teams is what a turn asks the team runtime (loop/team) about its seat.
// A turn without one (replay, tests) runs every agent unseated.
type Teams interface {
	// Seated is the agent as it sits here: a member gets the board's tools
	// and none of the lead's; a lead its own. ok false: not on a team.
	Seated(a Agent, seat Seat) (Agent, bool)
	// Workdir is the folder a member's tools use now — its claimed task's
	// worktree, or the team's workspace — and, for a workspace or shell
	// tool, why the call may not run (no claimed task, a broken binding,
	// the plan gate). dir "" keeps the agent's own workspace.
	Workdir(seat Seat, tool string) (dir, refusal string)
	// Prompt is the system prompt's section for the seat.
	Prompt(seat Seat, a Agent) string
	// Stop is why a member's running turn ends at this step boundary (a
	// shutdown request), or "".
	Stop(seat Seat) string
}

// seatOf places the conversation: a member's seat is in its state; any
// other conversation may be a lead's.
func seatOf(st *State) Seat {
	if st.Member != "" {
		return Seat{Conversation: st.Conversation, Team: st.Team, Member: st.Member}
	}
	return Seat{Conversation: st.Conversation, Team: st.Conversation, Child: st.ParentConversation != ""}
}

// TeamSeat is the team fold (R-TEAM): Team and Member seat a teammate's
// conversation; MailSeen is the last mailbox sequence delivered here and
// Assigned the last task a delivery assigned; LastRun and LastEnd are the
// latest finished run and how it ended (the teammate's report).
type TeamSeat struct {
	Team     string  `json:"team,omitempty"`
	Member   string  `json:"member,omitempty"`
	MailSeen uint64  `json:"mail_seen,omitempty"`
	Assigned string  `json:"assigned,omitempty"`
	LastRun  string  `json:"last_run,omitempty"`
	LastEnd  *RunEnd `json:"last_end,omitempty"`
}

func (f *TeamSeat) apply(env events.Envelope, on foldOn) {
	switch e := decoded(env).(type) {
	case *events.ConversationOpened:
		f.Team, f.Member = e.Team, e.Member
	case *events.MessageReceived:
		if d := e.Team; d != nil {
			f.MailSeen = max(f.MailSeen, d.Through)
			if d.Assigned != "" {
				f.Assigned = d.Assigned
			}
		}
	case *events.SteerReceived:
		if d := e.Team; d != nil {
			f.MailSeen = max(f.MailSeen, d.Through)
		}
	case *events.RunFinished:
		if on.end != nil && f.Member != "" {
			end := *on.end
			f.LastRun, f.LastEnd = e.RunID, &end
		}
	}
}
