package inbound

import (
	"context"
	"errors"
	"fmt"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
)

// errNoBackground: this crew runs no background commands (an entry point
// without the runner).
var errNoBackground = errors.New("background tasks are not run here")

// Tasks lists conversation's background tasks (GET
// /api/conversations/{id}/tasks), oldest first; an unknown conversation is
// ErrUnknownConversation.
func (s *Stops) Tasks(ctx context.Context, conversation string) ([]loop.TaskView, error) {
	if err := s.known(ctx, conversation); err != nil {
		return nil, err
	}
	bg := s.Worker.Background()
	if bg == nil {
		return []loop.TaskView{}, nil
	}
	return bg.Tasks(ctx, conversation)
}

// StopTask stops the background task id (POST /api/tasks/{id}/stop): its
// stop is stored on its conversation and its process group killed by the
// process running it. Unknown: loop.ErrUnknownTask; ended:
// loop.ErrTaskEnded.
func (s *Stops) StopTask(ctx context.Context, id, by string) (loop.TaskView, error) {
	if !loop.ValidStopBy(by) {
		return loop.TaskView{}, fmt.Errorf("%w: stopped by %q", loop.ErrBadScope, by)
	}
	if err := events.ValidID(id); err != nil {
		return loop.TaskView{}, fmt.Errorf("%w: %v", loop.ErrUnknownTask, err)
	}
	bg := s.Worker.Background()
	if bg == nil {
		return loop.TaskView{}, errNoBackground
	}
	if err := projections.ReadYourWrites(ctx, s.Log, s.Fresh); err != nil {
		return loop.TaskView{}, err
	}
	conv, err := projections.FindTask(s.DB, id)
	if errors.Is(err, projections.ErrNotFound) {
		return loop.TaskView{}, fmt.Errorf("%w: %s", loop.ErrUnknownTask, id)
	} else if err != nil {
		return loop.TaskView{}, err
	}
	return bg.StopTask(ctx, conv, id, by)
}
