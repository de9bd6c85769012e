package loop

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
