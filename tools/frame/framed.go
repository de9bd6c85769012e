// Package frame holds the harness's frames around what the model reads
// that is not the owner's words — the turn notes, the canvases, a team
// delivery, a background task's report — and Unframe, which neutralises
// frame-like text anywhere else (R-SEC-1, R-CTX-2). The loop frames a
// turn with them; the web chat shows a delivery's or a task's text as the
// model read it.
package frame

import (
	"regexp"
	"strings"

	"github.com/my-agent-crew/crew/events"
)

// Frame introduces the turn notes the model reads before a message: they
// are the harness's words, not the owner's. EndFrame closes them.
const (
	Frame    = "[Your memory — inserted by the system before this message, not the user's words]"
	EndFrame = "[End of memory]"
)

// frameLike matches text that reads as one of the harness's frames: the
// memory frame's opening and closing lines, "[Harness reminder]" and
// "[The owner's PostToolUse hook says]", the team runtime's frames
// ("[Team events …]", "[End of team events]", "[Auto-claimed task …]",
// "[Assigned task …]"), the background task frames, in any case, spacing or
// invisible characters, with ASCII or full-width brackets.
var frameLike = regexp.MustCompile(`(?i)[\[［][\s\p{Cf}]*(?:your[\s\p{Cf}]+(?:memory|canvases)|end[\s\p{Cf}]+of[\s\p{Cf}]+(?:memory|canvases)|harness[\s\p{Cf}]+reminder|the[\s\p{Cf}]+owner\S{0,2}s[\s\p{Cf}]+posttooluse|` + teamFrameLike + `|` + taskFrameLike + `)[^\]］\n]*[\]］]?`)

// Unframe neutralises every frame-like text in s (a note, fact, summary,
// owner's message or tool output) so that only the harness can open or
// close a frame (R-SEC-1, R-CTX-2): "[End of memory]" becomes
// "(quoted text: End of memory)". Text without one is returned as is.
func Unframe(s string) string {
	if !frameLike.MatchString(s) {
		return s
	}
	return frameLike.ReplaceAllStringFunc(s, func(m string) string {
		inner := strings.TrimRight(strings.TrimLeft(m, "[［"), "]］")
		return "(quoted text: " + strings.TrimSpace(inner) + ")"
	})
}

// CanvasFrame and EndCanvasFrame enclose a message's canvas notes, read
// after the memory block and before the message during the run the
// message opened (R-CTX-3); CanvasShownLine stands in for them in every
// later run, so the history before the newest turn stays byte-identical.
const (
	CanvasFrame     = "[Your canvases — inserted by the system before this message, not the user's words]"
	EndCanvasFrame  = "[End of canvases]"
	CanvasShownLine = "[Your canvases: what changed in them was shown with this message during its turn; artifact_list and artifact_read show them now.]"
)

// Framed is what the model reads for a turn-opening message: the notes
// inside the frame, then the message, each with its frame-like text
// neutralised (Unframe), so the frame the harness writes is the only one.
// With no notes it is Unframe(message).
func Framed(notes *events.TurnNotes, message string) string {
	message = Unframe(message)
	if notes == nil || notes.Text == "" {
		return message
	}
	return Frame + "\n" + Unframe(notes.Text) + "\n" + EndFrame + "\n\n" + message
}
