package loop_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
)

// A read-only crew's conversations refuse to load or write (ErrReadOnly)
// and redact with the home's secrets.
func TestReadOnlyLogRefusesEveryConversation(t *testing.T) {
	r := events.NewRedactor()
	l := loop.ReadOnlyLog{Secrets: r}
	if _, err := loop.NewConvs(l, nil).Get(t.Context(), "c1"); !errors.Is(err, loop.ErrReadOnly) {
		t.Errorf("Convs.Get = %v, want ErrReadOnly", err)
	}
	if _, err := l.Append(t.Context(), events.Conv("c1"), 0); !errors.Is(err, loop.ErrReadOnly) {
		t.Errorf("Append = %v, want ErrReadOnly", err)
	}
	if _, err := l.Last(t.Context(), "crew.>"); !errors.Is(err, loop.ErrReadOnly) {
		t.Errorf("Last = %v, want ErrReadOnly", err)
	}
	if l.Redactor() != r {
		t.Error("not the home's redactor")
	}
}

// LiveOn publishes a delta on the conversation's live subject, where
// the SSE feed (events.LiveFeed) reads it; no connection, no publisher.
func TestLiveOnPublishesForTheFeed(t *testing.T) {
	if loop.LiveOn(nil) != nil {
		t.Fatal("a publisher without a connection")
	}
	srv, _ := eventstest.Start(t)
	got := make(chan []byte, 1)
	stop, err := events.LiveFeed(srv.Conn())("c1", func(b []byte) { got <- b })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := srv.Conn().Flush(); err != nil { // the subscription is on the server before the publish
		t.Fatal(err)
	}
	loop.LiveOn(srv.Conn())("c1", "r1", llm.Delta{Text: "hel"})
	select {
	case b := <-got:
		var m struct {
			RunID string    `json:"run_id"`
			Delta llm.Delta `json:"delta"`
		}
		if err := json.Unmarshal(b, &m); err != nil || m.RunID != "r1" || m.Delta.Text != "hel" {
			t.Errorf("published %s (%v)", b, err)
		}
	case <-t.Context().Done():
		t.Fatal("nothing published")
	}
}
