package inbound_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
	"go.etcd.io/bbolt"
)

const longConversation = 10_000

// seedLong stores a 10,000-event conversation shaped like real turns:
// message, run, model call with a tool call, tool result, answer, end.
func seedLong(b *testing.B, log *events.Log) {
	b.Helper()
	js := log.JetStream()
	c := 0.0004
	for i := 0; i < longConversation; i += 6 {
		run := fmt.Sprint("r", i)
		for _, e := range []events.Event{
			&events.MessageReceived{Channel: "web", Text: fmt.Sprintf("question %d: what about the plan for tomorrow?", i)},
			&events.RunStarted{RunID: run, Agent: "master", Trigger: "message"},
			&events.ModelCalled{RunID: run, Step: 1, Route: "fake:echo", Model: "echo", CostUSD: &c, InputTokens: 900, OutputTokens: 40,
				ToolCalls: []events.ToolCallRequest{{ID: "c1", Name: "workspace_read", Arguments: json.RawMessage(`{"path":"notes/plan.md"}`)}}},
			&events.ToolCompleted{RunID: run, Step: 1, CallID: "c1", Tool: "workspace_read", Output: "- run 10k\n- stretch\n- eat early"},
			&events.ModelCalled{RunID: run, Step: 2, Route: "fake:echo", Model: "echo", CostUSD: &c, Text: "Run 10k early, then stretch."},
			&events.RunFinished{RunID: run, Status: events.RunDone},
		} {
			env := events.MustNew(e)
			body, _ := json.Marshal(env)
			if _, err := js.PublishAsync(events.Conv("long").Subject(env.Type), body); err != nil {
				b.Fatal(err)
			}
		}
	}
	<-js.PublishAsyncComplete()
}

// BenchmarkTurnStateFromSnapshot: what a turn pays to get its state for a
// 10,000-event conversation when a snapshot exists and a new message has
// arrived since (snapshot + tail).
func BenchmarkTurnStateFromSnapshot(b *testing.B) {
	_, log := eventstest.Start(b)
	seedLong(b, log)
	db, err := bbolt.Open(filepath.Join(b.TempDir(), "p.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	snaps := projections.Snapshots{DB: db}
	ctx := context.Background()
	if _, err := loop.LoadState(ctx, log, snaps, "long"); err != nil { // writes the snapshot
		b.Fatal(err)
	}
	last, _ := log.Last(ctx, events.Conv("long").Filter())
	if _, err := log.Append(ctx, events.Conv("long"), last, events.MustNew(&events.MessageReceived{Channel: "web", Text: "and today?"})); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		st, err := loop.LoadState(ctx, log, snaps, "long")
		if err != nil {
			b.Fatal(err)
		}
		if len(st.Messages) < longConversation*4/6 {
			b.Fatalf("%d messages", len(st.Messages))
		}
	}
}

// BenchmarkTurnStateColdReplay: the same state from the whole log.
func BenchmarkTurnStateColdReplay(b *testing.B) {
	_, log := eventstest.Start(b)
	seedLong(b, log)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := loop.LoadState(ctx, log, nil, "long"); err != nil {
			b.Fatal(err)
		}
	}
}
