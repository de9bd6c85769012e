package loop

import (
	"context"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/refusal"
)

// ErrUnknownConversation: FocusCanvas on a conversation no agent took up.
var ErrUnknownConversation = refusal.ErrUnknownConversation

// FocusCanvas stores the conversation's open canvas and selection (the
// owner's, canvas_focused) through its writer, so it is ordered with the
// conversation's other events, and returns its sequence: the canvas notes
// of the next message carry it. ErrUnknownConversation for a conversation
// no agent took up.
func (cs *Convs) FocusCanvas(ctx context.Context, id string, f events.CanvasFocused) (uint64, error) {
	c, err := cs.Get(ctx, id)
	if err != nil {
		return 0, err
	}
	stored, err := c.Append(ctx, func(st *State) ([]events.Event, error) {
		if st.Agent == "" {
			return nil, fmt.Errorf("conversation %q: %w", id, ErrUnknownConversation)
		}
		return []events.Event{&f}, nil
	})
	if err != nil || len(stored) == 0 {
		return 0, err
	}
	return stored[len(stored)-1].Seq, nil
}

// CanvasMarks is the canvas fold (R-CTX-3): what this conversation knows
// of each canvas, folded from canvas tool results (a script's too) and
// canvas notes; RunCanvas what the open run wrote (the per-turn limits).
type CanvasMarks struct {
	Canvas    map[string]CanvasMark `json:"canvas,omitempty"`
	RunCanvas RunCanvas             `json:"run_canvas,omitzero"`
}

// CanvasMark is what a conversation knows of one canvas: the newest
// version it knows whole (read whole, wrote, or told by a complete diff)
// and the newest version it was told of at all.
type CanvasMark struct {
	Seen int `json:"seen,omitempty"`
	Told int `json:"told,omitempty"`
}

// RunCanvas counts the open run's canvas writes.
type RunCanvas struct {
	Created int            `json:"created,omitempty"`
	Writes  map[string]int `json:"writes,omitempty"`
}

func (c *CanvasMarks) apply(env events.Envelope, on foldOn) {
	switch e := decoded(env).(type) {
	case *events.MessageReceived:
		c.tell(e.CanvasNotes)
	case *events.SteerReceived:
		c.tell(e.CanvasNotes)
	case *events.RunStarted:
		c.RunCanvas = RunCanvas{}
	case *events.ToolCompleted:
		c.ref(e.Canvas, e.IsError, e.RunID == on.open)
	case *events.NestedCall:
		c.ref(e.Canvas, e.IsError, e.RunID == on.open)
	}
}

func (c *CanvasMarks) mark(artifact string, version int, whole bool) {
	if c.Canvas == nil {
		c.Canvas = map[string]CanvasMark{}
	}
	m := c.Canvas[artifact]
	m.Told = max(m.Told, version)
	if whole {
		m.Seen = max(m.Seen, version)
	}
	c.Canvas[artifact] = m
}

// tell records what a stored message's canvas notes told.
func (c *CanvasMarks) tell(n *events.CanvasNotes) {
	if n == nil {
		return
	}
	for _, t := range n.Told {
		c.mark(t.Artifact, t.Version, t.Whole)
	}
}

// ref records what a canvas call showed and wrote; open: the call is the
// open run's, whose writes count.
func (c *CanvasMarks) ref(r *events.CanvasRef, isErr, open bool) {
	if r == nil || r.Artifact == "" {
		return
	}
	c.mark(r.Artifact, r.Version, r.Whole)
	if r.Op == "" || isErr || !open {
		return
	}
	if r.Op == events.OpCreate || r.Op == events.OpImport && r.Version == 1 {
		c.RunCanvas.Created++
		return
	}
	if c.RunCanvas.Writes == nil {
		c.RunCanvas.Writes = map[string]int{}
	}
	c.RunCanvas.Writes[r.Artifact]++
}

// CanvasSeen maps each canvas to the version the conversation knows whole.
func (c *CanvasMarks) CanvasSeen() map[string]int {
	out := make(map[string]int, len(c.Canvas))
	for id, m := range c.Canvas {
		if m.Seen > 0 {
			out[id] = m.Seen
		}
	}
	return out
}

// CanvasChannel is the channel whose rules the conversation's canvas
// writes follow: its own, or its delegation root's.
func (s *State) CanvasChannel() string {
	if s.RootID != "" {
		return s.RootSource
	}
	return s.Channel
}
