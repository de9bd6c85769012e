package app

import (
	"context"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
)

// canvasAPI wires /api/artifacts: the canvas service, agents' workspaces
// for reimports, and the conversations' open canvas (canvas_focused,
// appended through the conversation's writer).
func (a *App) canvasAPI() *web.CanvasAPI {
	return &web.CanvasAPI{
		Service: a.Canvas,
		Fresh:   a.Runner,
		Crew:    loop.CrewView{Crew: a.Crew},
		Focus: func(ctx context.Context, conv string, f events.CanvasFocused) (uint64, error) {
			cv, err := a.Convs.Get(ctx, conv)
			if err != nil {
				return 0, err
			}
			stored, err := cv.Append(ctx, func(st *loop.State) ([]events.Event, error) {
				if st.Agent == "" {
					return nil, web.ErrNotFound
				}
				return []events.Event{&f}, nil
			})
			if err != nil || len(stored) == 0 {
				return 0, err
			}
			return stored[len(stored)-1].Seq, nil
		},
	}
}
