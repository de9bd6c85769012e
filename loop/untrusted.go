package loop

import (
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools/fence"
)

// Untrusted is the untrusted-content fold (R-X-7): RunUntrusted names
// what untrusted content the open run has read (a fenced tool result, a
// script's call that read outside content, a message from another agent
// of the team), "" for none: memory writes after it carry the mark.
type Untrusted struct {
	RunUntrusted string `json:"run_untrusted,omitempty"`
}

// teamMessage marks a run that read another agent's words.
const teamMessage = "a team message"

func (f *Untrusted) apply(env events.Envelope, on foldOn) {
	mark := func(what string) {
		if f.RunUntrusted == "" {
			f.RunUntrusted = what
		}
	}
	switch e := decoded(env).(type) {
	case *events.RunStarted:
		f.RunUntrusted = ""
		if on.queuedTeam { // another agent's words, not the owner's
			mark(teamMessage)
		}
	case *events.SteersApplied:
		for _, p := range on.steers {
			if p.Team && !e.Withheld && applies(e, p) {
				mark(teamMessage)
			}
		}
	case *events.ToolCompleted:
		if e.RunID == on.open && strings.Contains(e.Output, fence.Marker) {
			mark(e.Tool)
		}
	case *events.NestedCall:
		if e.RunID == on.open && e.Untrusted {
			mark(e.Tool + " (in a script)")
		}
	}
}

// applies says steers_applied e applies steer p.
func applies(e *events.SteersApplied, p Pending) bool {
	for _, id := range e.SteerIDs {
		if id == p.EventID {
			return true
		}
	}
	return false
}
