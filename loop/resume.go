package loop

import (
	"context"
	"strings"

	"github.com/my-agent-crew/crew/events"
)

// finishDecided ends an open run whose end the log already holds but whose
// run_finished it does not: a crash fell between the run's last word and
// its close. A reply without tool calls is the run's answer, and an
// ask_user reply of a delegated conversation whose calls all have results
// has asked its question; the
// run finishes with them, so a resumed run never asks the model again and
// a message gets one reply however often the server dies (issue 10 item 6).
func (t *Turn) finishDecided(ctx context.Context) (bool, error) {
	var runID, reason string
	var done bool
	t.conv.View(func(st *State) { runID, reason, done = decidedEnd(st) })
	if !done {
		return false, nil
	}
	return true, t.finish(ctx, runID, events.RunDone, reason, "")
}

// decidedEnd says whether st's open run has ended in all but its record,
// and with which reason ("" or "ask_user").
func decidedEnd(st *State) (runID, reason string, done bool) {
	if st.OpenRun == "" {
		return "", "", false
	}
	// The run's last model reply, if it made one: an assistant message
	// after the run's first message (RunFrom).
	last := -1
	for i := len(st.Messages) - 1; i >= st.RunFrom && i >= 0; i-- {
		if st.Messages[i].Role == RoleAssistant {
			last = i
			break
		}
	}
	if last < 0 {
		return "", "", false
	}
	reply := st.Messages[last]
	if len(reply.ToolCalls) == 0 {
		// Nothing the model has not read may follow the answer (a guard
		// reminder or a steer comes before the next model call, never
		// after a final reply; be sure all the same).
		if last == len(st.Messages)-1 {
			return st.OpenRun, "", true
		}
		return "", "", false
	}
	answered := map[string]bool{}
	legacy := false
	for _, m := range st.Messages[last+1:] {
		if m.Role == RoleTool {
			answered[m.ToolCallID] = true
			legacy = legacy || (m.Tool == AskUserTool && strings.HasPrefix(m.Text, legacyAskText))
		}
	}
	asked := false
	for _, c := range reply.ToolCalls {
		if !answered[c.ID] {
			return "", "", false
		}
		// A delegated conversation's ask_user ended its run; a root's
		// was answered, and the run carries on.
		// A log of a build before questions paused (legacyAskText) ended
		// the run there too.
		asked = asked || (c.Name == AskUserTool && (st.ParentConversation != "" || legacy))
	}
	if asked {
		return st.OpenRun, "ask_user", true
	}
	return "", "", false
}

// legacyAskText is what ask_user answered before a question paused the
// turn: the run ended on it, and the answer came as the next message.
const legacyAskText = "Your question was shown to the owner."
