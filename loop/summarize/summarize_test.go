package summarize_test

import (
	"errors"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
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
	s := &summarize.Summarizer{Log: log, Convs: convs, Clock: loop.WallClock{Zone: time.UTC},
		Crew: loop.Agents{}}

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

// R-LOOP-5: a summary's model call is recorded on the conversation as a
// model_called with purpose summary (usage and cost for the ledger), next
// to the summary itself.
func TestSummaryRecordsItsModelCallWithPurpose(t *testing.T) {
	ctx := t.Context()
	_, log := eventstest.Start(t)
	model, err := llm.ParseScript("summary.yaml", []byte("- text: \"Summary: talked about lunch\"\n  usage: {input: 30, output: 6, cost_usd: 0.004}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := &summarize.Summarizer{Log: log, Convs: loop.NewConvs(log, nil), Clock: loop.WallClock{Zone: time.UTC},
		Crew:   loop.Agents{"master": {ID: "master", Routes: []string{"fake:s"}}},
		Models: llm.ModelsFunc(func(string) (llm.Model, error) { return model, nil })}
	if _, err := log.Append(ctx, events.Conv("c1"), 0,
		events.MustNew(&events.ConversationOpened{Agent: "master", Channel: "web"}),
		events.MustNew(&events.MessageReceived{Channel: "web", Text: "lunch?"})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Summarize(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	envs, err := log.ReadAll(ctx, events.Conv("c1").Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var calls []*events.ModelCalled
	for _, env := range envs {
		if e, _ := env.Decode(); e != nil {
			if mc, ok := e.(*events.ModelCalled); ok {
				calls = append(calls, mc)
			}
		}
	}
	if len(calls) != 1 || calls[0].Purpose != events.PurposeSummary || calls[0].RunID != "" ||
		calls[0].InputTokens != 30 || calls[0].OutputTokens != 6 || calls[0].CostUSD == nil || *calls[0].CostUSD != 0.004 {
		t.Fatalf("model calls = %+v", calls)
	}
}
