package notes_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/notes"
	"github.com/my-agent-crew/crew/tools/canvas"
)

// brokenStore is a canvas read model whose every read fails.
type brokenStore struct{}

var errBroken = errors.New("projection file unreadable")

func (brokenStore) Canvas(string) (events.CanvasRecord, error) {
	return events.CanvasRecord{}, errBroken
}
func (brokenStore) Content(string, int) (string, error)        { return "", errBroken }
func (brokenStore) List(string) ([]events.CanvasRecord, error) { return nil, errBroken }
func (brokenStore) Linked(string) ([]string, error)            { return nil, errBroken }
func (brokenStore) Focus(string) (events.CanvasFocused, bool, error) {
	return events.CanvasFocused{}, false, errBroken
}
func (brokenStore) Bytes() (int64, error) { return 0, errBroken }

// Canvas notes that cannot be made cost the notes, never the message: it
// is stored with its turn notes and without canvas notes.
func TestCanvasNoteFailureStillStoresTheMessage(t *testing.T) {
	_, log := eventstest.Start(t)
	convs := loop.NewConvs(log, nil)
	base := func(ctx context.Context, o loop.Opening) loop.Opened {
		return loop.Opened{Notes: &events.TurnNotes{Text: "memory"}}
	}
	convs.SetOpener(notes.WithCanvas(base, &canvas.Service{Store: brokenStore{}, Log: log}, slog.New(slog.DiscardHandler)))
	conv, err := convs.Get(t.Context(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := conv.Append(t.Context(), func(*loop.State) ([]events.Event, error) {
		return []events.Event{&events.ConversationOpened{Agent: "master", Channel: "web"}, &events.MessageReceived{Channel: "web", Text: "hello"}}, nil
	})
	if err != nil || len(stored) != 2 {
		t.Fatalf("stored %d events: %v", len(stored), err)
	}
	e, _ := stored[1].Decode()
	m := e.(*events.MessageReceived)
	if m.Text != "hello" || m.CanvasNotes != nil || m.TurnNotes == nil {
		t.Errorf("message stored as %+v", m)
	}
}
