package summarize_test

import (
	"errors"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/summarize"
)

// TestSummarizerRefusesWithItsOwnSentinels: an unknown or malformed id, a
// conversation with nothing to summarize and one with a run going are
// refused with the package's sentinels (the gateways map them), and
// nothing is appended.
func TestSummarizerRefusesWithItsOwnSentinels(t *testing.T) {
	ctx := t.Context()
	_, log := eventstest.Start(t)
	convs := loop.NewConvs(log, nil)
	s := &summarize.Summarizer{Log: log, Convs: convs, Location: time.UTC, Clock: time.Now,
		Agents: func(string) (loop.Agent, bool) { return loop.Agent{}, false }}

	for _, id := range []string{"nosuch", "not an id!"} {
		if _, err := s.Summarize(ctx, id); !errors.Is(err, summarize.ErrUnknownConversation) {
			t.Errorf("Summarize(%q): %v, want ErrUnknownConversation", id, err)
		}
		if _, err := s.Close(ctx, id); !errors.Is(err, summarize.ErrUnknownConversation) {
			t.Errorf("Close(%q): %v, want ErrUnknownConversation", id, err)
		}
	}

	if _, err := log.Append(ctx, events.Conv("c1"), 0,
		events.MustNew(&events.ConversationOpened{Agent: "master", Channel: "web"}),
		events.MustNew(&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"})); err != nil {
		t.Fatal(err)
	}
	before, err := log.Last(ctx, events.Conv("c1").Filter())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Summarize(ctx, "c1"); !errors.Is(err, summarize.ErrNothingToSummarize) {
		t.Errorf("Summarize of a conversation with no message: %v, want ErrNothingToSummarize", err)
	}
	if _, err := s.Close(ctx, "c1"); !errors.Is(err, summarize.ErrNotClosable) {
		t.Errorf("Close with a run going: %v, want ErrNotClosable", err)
	}
	if after, _ := log.Last(ctx, events.Conv("c1").Filter()); after != before {
		t.Errorf("refusals appended: last sequence %d, was %d", after, before)
	}
}
