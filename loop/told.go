package loop

import "github.com/my-agent-crew/crew/events"

// NotesTold is the turn-notes fold (R-CTX-2): Told is what this
// conversation has been told of each memory item, folded from the stored
// messages' and steers' notes.
type NotesTold struct {
	Told map[string]events.NoteTold `json:"told,omitempty"`
}

func (f *NotesTold) apply(env events.Envelope, _ foldOn) {
	switch e := decoded(env).(type) {
	case *events.MessageReceived:
		f.tell(e.TurnNotes)
	case *events.SteerReceived:
		f.tell(e.TurnNotes)
	}
}

// tell records what a stored message's notes told the conversation.
func (f *NotesTold) tell(n *events.TurnNotes) {
	if n == nil {
		return
	}
	if f.Told == nil {
		f.Told = map[string]events.NoteTold{}
	}
	for _, t := range n.Told {
		f.Told[t.Key] = t
	}
}
