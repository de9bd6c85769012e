package loop

import (
	"slices"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools/fence"
	"github.com/my-agent-crew/crew/tools/frame"
)

// The harness's frames (tools/frame, which the web chat reads too): the
// turn notes', the canvases', the team runtime's and a background task's.
const (
	Frame           = frame.Frame
	EndFrame        = frame.EndFrame
	CanvasFrame     = frame.CanvasFrame
	EndCanvasFrame  = frame.EndCanvasFrame
	CanvasShownLine = frame.CanvasShownLine
	TeamFrame       = frame.TeamFrame
	EndTeamFrame    = frame.EndTeamFrame
	ItemAssigned    = frame.ItemAssigned
	ItemAutoClaimed = frame.ItemAutoClaimed
	TaskFrame       = frame.TaskFrame
	EndTaskFrame    = frame.EndTaskFrame
)

// Unframe neutralises every frame-like text in s (frame.Unframe).
func Unframe(s string) string { return frame.Unframe(s) }

// Framed is what the model reads for a turn-opening message
// (frame.Framed).
func Framed(notes *events.TurnNotes, message string) string { return frame.Framed(notes, message) }

// TeamText is what the model reads for a delivery (frame.TeamText).
func TeamText(d *events.TeamDelivery) string { return frame.TeamText(d) }

// TaskText is what the model reads for a task notification
// (frame.TaskText).
func TaskText(n *events.TaskNotification) string { return frame.TaskText(n) }

// canvasNoted is msgs as the model reads them: each message's canvas notes
// framed when it belongs to the open run (from runFrom on), the fixed
// line before that. msgs itself is not changed.
func canvasNoted(msgs []Message, runFrom int) []Message {
	var out []Message
	for i, m := range msgs {
		if m.Canvas == "" {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		block := frame.CanvasShownLine + "\n\n"
		if i >= runFrom {
			// What changed in the canvases is the agents' and pages' words,
			// not the owner's: sealed inside the frame (R-SEC-1).
			block = frame.CanvasFrame + "\n" + fence.Seal("canvas notes", frame.Unframe(m.Canvas)) + "\n" + frame.EndCanvasFrame + "\n\n"
		}
		at := 0
		if m.Notes != "" {
			if j := strings.Index(m.Text, frame.EndFrame+"\n\n"); j >= 0 {
				at = j + len(frame.EndFrame) + 2
			}
		}
		out[i].Text = m.Text[:at] + block + m.Text[at:]
	}
	if out == nil {
		return msgs
	}
	return out
}

// teamPending is a delivery as it waits for the next turn: the notes
// framed, then the team block.
func teamPending(env events.Envelope, notes *events.TurnNotes, d *events.TeamDelivery) Pending {
	p := Pending{EventID: env.ID, Seq: env.Seq, Team: true}
	text := frame.TeamText(d)
	if notes != nil && notes.Text != "" {
		p.Notes = notes.Text
		text = frame.Framed(notes, "") + text
	}
	p.Text = text
	return p
}
