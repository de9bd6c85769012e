package notes

import (
	"context"
	"log/slog"

	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools/canvas"
)

// WithCanvas adds the canvas notes (R-CTX-3) to what next makes: what
// changed in the conversation's canvases since it last saw them, and, on
// a web chat message, the canvas open beside the chat and the selected
// lines. Notes that cannot be made cost the notes, never the message.
func WithCanvas(next loop.Opener, cv *canvas.Service, logger *slog.Logger) loop.Opener {
	return func(ctx context.Context, o loop.Opening) loop.Opened {
		out := next(ctx, o)
		marks := make(map[string]canvas.Mark, len(o.Canvas))
		for id, m := range o.Canvas {
			marks[id] = canvas.Mark{Seen: m.Seen, Told: m.Told}
		}
		n, err := cv.Notes(ctx, canvas.NotesFor{Conversation: o.Conversation, Agent: o.Agent, Web: o.Channel == "web", Marks: marks})
		if err != nil {
			logger.Warn("canvas notes not made; the message is stored without them", "conversation", o.Conversation, "err", err)
			return out
		}
		out.CanvasNotes = n
		return out
	}
}
