package loop_test

import (
	"context"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/notes"
)

// The model reads turn notes in the order it reads the messages: a steer
// reaches it at the next tool boundary, before the messages queued during
// the run. A steer stored after such a message must not tell "new lines
// since last told" over notes the model has not read yet; the queued
// message carries them.
func TestSteerAfterQueuedMessageCarriesNoNotes(t *testing.T) {
	_, log := eventstest.Start(t)
	note := "- 09:00 ate oats"
	convs := loop.NewConvsFrom(loop.ConvsConfig{Log: log, Opener: func(ctx context.Context, o loop.Opening) loop.Opened {
		return loop.Opened{Notes: notes.Compose(o.Told, []notes.Item{{Key: "memory/2026-11-30.md", Title: "Today's notes", Content: note}})}
	}})
	ctx := t.Context()
	conv, err := convs.Get(ctx, "steer-notes")
	if err != nil {
		t.Fatal(err)
	}
	add := func(evs ...events.Event) {
		t.Helper()
		if _, err := conv.Append(ctx, func(*loop.State) ([]events.Event, error) { return evs, nil }); err != nil {
			t.Fatal(err)
		}
	}
	add(&events.ConversationOpened{Agent: "master", Channel: "web"}, &events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"})
	add(&events.MessageReceived{Channel: "web", Text: "queued during the run"})
	note += "\n- 09:05 walked"
	add(&events.SteerReceived{Channel: "web", Text: "steer"})
	var steers []loop.Pending
	conv.View(func(st *loop.State) { steers = append(steers, st.Steers...) })
	if len(steers) != 1 {
		t.Fatalf("steers = %+v", steers)
	}
	if steers[0].Text != "steer" || strings.Contains(steers[0].Text, "new lines") {
		t.Errorf("the steer, read before the queued message, reads:\n%s", steers[0].Text)
	}
	// The next message tells what changed since the queued one.
	add(&events.RunFinished{RunID: "r1", Status: events.RunDone})
	add(&events.MessageReceived{Channel: "web", Text: "next"})
	var last loop.Pending
	conv.View(func(st *loop.State) { last = st.Queued[len(st.Queued)-1] })
	if !strings.Contains(last.Text, "new lines since last told:\n- 09:05 walked") {
		t.Errorf("the next message reads:\n%s", last.Text)
	}
}
