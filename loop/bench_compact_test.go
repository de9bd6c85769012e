package loop

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop/llm"
)

// longState is a 400-turn history (1,600 messages, tool results of about
// 1 KB) and the compaction events a small window would have made of it.
func longState() ([]events.Event, *State) {
	var evs []events.Event
	out := strings.Repeat("dòng dữ liệu của công cụ\n", 40)
	for i := range 400 {
		run := fmt.Sprintf("r%d", i)
		id := fmt.Sprintf("c%d", i)
		evs = append(evs,
			&events.MessageReceived{Channel: "web", Text: fmt.Sprint("tra cứu số ", i)},
			&events.RunStarted{RunID: run, Agent: "master", Trigger: "message"},
			&events.ModelCalled{RunID: run, Step: 1, Route: "fake:a", Model: "a", ToolCalls: []events.ToolCallRequest{{ID: id, Name: "look", Arguments: json.RawMessage(`{"n":1}`)}}},
			&events.ToolCompleted{RunID: run, Step: 1, CallID: id, Tool: "look", Output: out},
			&events.ModelCalled{RunID: run, Step: 2, Route: "fake:a", Model: "a", Text: "Xong."},
			&events.RunFinished{RunID: run, Status: events.RunDone})
		if i%10 == 9 && i > 20 {
			var rs []events.CompactedResult
			for j := i - 19; j < i-9; j++ {
				rs = append(rs, events.CompactedResult{CallID: fmt.Sprintf("c%d", j), Chars: len(out), Text: "[compacted]"})
			}
			evs = append(evs, &events.ContextCompacted{RunID: run, Step: 2, Stage: events.CompactMicro, Results: rs})
		}
		if i%100 == 99 {
			evs = append(evs, &events.ContextCompacted{RunID: run, Step: 2, Stage: events.CompactSummary, From: 0, To: 4 * (i - 20), Text: "Tóm tắt."})
		}
	}
	st := &State{Conversation: "c"}
	for _, e := range evs {
		st.Apply(events.Envelope{Data: mustJSON(e), Type: e.EventType(), V: e.EventVersion()})
	}
	return evs, st
}

func mustJSON(e events.Event) json.RawMessage { b, _ := json.Marshal(e); return b }

// BenchmarkCompactionView is what every model call pays for compaction: the
// compacted view of a 1,600-message history, the request built and its
// size estimated (the stages decide on this number).
func BenchmarkCompactionView(b *testing.B) {
	_, st := longState()
	b.ReportAllocs()
	for b.Loop() {
		v := messagesOf(modelView(st.Messages, st.Compaction))
		_ = llm.EstimateTokens(toLLM("system", v), nil)
	}
}

// BenchmarkCompactionViewRaw is the baseline: the same history sent whole.
func BenchmarkCompactionViewRaw(b *testing.B) {
	_, st := longState()
	b.ReportAllocs()
	for b.Loop() {
		_ = toLLM("system", st.Messages)
	}
}

// BenchmarkStateLoadAfterCompaction is a cold replay of the 400 turns with
// their compaction events; BenchmarkStateLoadNoCompaction the same turns
// without them.
func BenchmarkStateLoadAfterCompaction(b *testing.B) { benchLoad(b, true) }
func BenchmarkStateLoadNoCompaction(b *testing.B)    { benchLoad(b, false) }

func benchLoad(b *testing.B, withCompaction bool) {
	evs, _ := longState()
	_, log := eventstest.Start(b)
	var last uint64
	for _, e := range evs {
		if _, ok := e.(*events.ContextCompacted); ok && !withCompaction {
			continue
		}
		stored, err := log.Append(b.Context(), events.Conv("c"), last, events.MustNew(e))
		if err != nil {
			b.Fatal(err)
		}
		last = stored[0].Seq
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadState(b.Context(), log, nil, "c"); err != nil {
			b.Fatal(err)
		}
	}
}
