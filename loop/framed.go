package loop

import "github.com/my-agent-crew/crew/events"

// Frame introduces the turn notes the model reads before a message: they
// are the harness's words, not the owner's.
const Frame = "[Your memory — inserted by the system before this message, not the user's words]"

// Framed is what the model reads for a turn-opening message: the notes
// inside the frame, then the message. With no notes it is message, byte
// for byte.
func Framed(notes *events.TurnNotes, message string) string {
	if notes == nil || notes.Text == "" {
		return message
	}
	return Frame + "\n" + notes.Text + "\n[End of memory]\n\n" + message
}
