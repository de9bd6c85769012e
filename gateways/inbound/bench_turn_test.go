package inbound_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
	"github.com/nats-io/nuid"
)

// stepModel answers by the history it is sent: while fewer than steps
// assistant messages exist since the last user message it asks for a tool
// (new arguments each time, so the loop guard stays quiet), then answers.
// Stateless, so any number of conversations can share it.
type stepModel struct {
	steps int
	mu    sync.Mutex
	at    []time.Time // when each call arrived
}

func (m *stepModel) Call(ctx context.Context, req llm.Request) (llm.Reply, error) {
	m.mu.Lock()
	m.at = append(m.at, time.Now())
	m.mu.Unlock()
	n := 0
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role != llm.RoleUser; i-- {
		if req.Messages[i].Role == llm.RoleAssistant {
			n++
		}
	}
	rep := llm.Reply{Usage: llm.Usage{Input: 100, Output: 10}, CostUSD: new(float64)}
	if n < m.steps-1 {
		rep.ToolCalls = []llm.ToolCall{{ID: nuid.Next(), Name: "noop", Arguments: fmt.Sprintf(`{"n":%d}`, n)}}
	} else {
		rep.Text = "done"
	}
	return rep, nil
}

type noop struct{}

func (noop) Def() tools.Def {
	return tools.Def{Name: "noop", Description: "does nothing", Params: json.RawMessage(`{"type":"object"}`)}
}
func (noop) Run(context.Context, tools.Env, json.RawMessage) (tools.Result, error) {
	return tools.Result{Output: "ok"}, nil
}

func benchAgent(b *testing.B, steps int) loop.Agent {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("You are a benchmark."), 0o600)
	return loop.Agent{ID: "master", Dir: dir, Workspace: dir, Routes: []string{"fake:bench"}, Tools: []string{"noop"},
		MaxSteps: steps + 1, CostCapUSD: 0, ToolOutputChars: 8000, ApprovalTTL: time.Minute}
}

func benchDeps(b *testing.B, m llm.Model) loop.Deps {
	reg, err := tools.New(noop{})
	if err != nil {
		b.Fatal(err)
	}
	return loop.Deps{
		Models: llm.ModelsFunc(func(string) (llm.Model, error) { return m, nil }),
		Tools:  reg, Clock: loop.WallClock{}, HomeDir: b.TempDir(),
	}
}

// BenchmarkToolStep measures the harness's overhead per tool step with the
// fake provider and a no-op tool: prompt assembly, the model-call, tool-call
// and tool-result events (stored; with sync=always fsynced once per
// decision, ADR 0008: here, with no ledger, at the run's start and end),
// state upkeep.
// One op is one step; turns are 10 steps on fresh conversations, as in use.
// p50/p99 are per-step latencies.
func BenchmarkToolStep(b *testing.B) {
	for _, sync := range []string{events.SyncAlways, events.SyncInterval} {
		b.Run(sync, func(b *testing.B) {
			_, log := eventstest.Start(b, eventstest.WithSync(sync))
			const steps = 10
			m := &stepModel{steps: steps}
			agent, deps := benchAgent(b, steps), benchDeps(b, m)
			convs := loop.NewConvs(log, nil)
			ctx := context.Background()
			done := 0
			var lat []time.Duration
			fsyncs0 := log.Fsyncs()
			b.ResetTimer()
			for i := 0; done < b.N; i++ {
				conv, err := convs.Get(ctx, fmt.Sprint("bench-", i))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := conv.Append(ctx, func(*loop.State) ([]events.Event, error) {
					return []events.Event{&events.ConversationOpened{Agent: "master", Channel: "web"}, &events.MessageReceived{Channel: "web", Text: "go"}}, nil
				}); err != nil {
					b.Fatal(err)
				}
				m.at = m.at[:0]
				if err := loop.NewTurn(agent, deps, conv).Run(ctx); err != nil {
					b.Fatal(err)
				}
				for j := 1; j < len(m.at); j++ {
					lat = append(lat, m.at[j].Sub(m.at[j-1]))
				}
				done += steps
			}
			b.StopTimer()
			b.ReportMetric(float64(log.Fsyncs()-fsyncs0)/float64(done), "fsyncs/step")
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms/step")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms/step")
		})
	}
}

// BenchmarkConcurrentConversations: 1,000 conversations at once, each a
// 3-step turn, through the inbound door and the worker on 2
// cores, with the default limit of idle states in memory
// (loop.DefaultIdleConversations). It fails on any error or any message
// left unanswered, and reports the states held and the heap (after a GC)
// once every turn has finished.
//
// CREW_BENCH_CONVERSATIONS=10000 adds a run of that many with sync
// interval (opt-in: see docs/performance.md; with always, a burst of
// 10,000 opening messages at once waits on that many fsyncs in a row, and
// the later ones outlast the client's 5 s publish timeout on this disk).
func BenchmarkConcurrentConversations(b *testing.B) {
	b.Run("1000", func(b *testing.B) { concurrentConversations(b, 1000, events.SyncAlways) })
	if n, err := strconv.Atoi(os.Getenv("CREW_BENCH_CONVERSATIONS")); err == nil && n > 0 {
		b.Run(fmt.Sprintf("%d_interval", n), func(b *testing.B) { concurrentConversations(b, n, events.SyncInterval) })
	}
}

func concurrentConversations(b *testing.B, n int, syncMode string) {
	var held int
	var heap uint64
	for b.Loop() {
		b.StopTimer()
		_, log := eventstest.Start(b, eventstest.WithSync(syncMode))
		m := &stepModel{steps: 3}
		agent, deps := benchAgent(b, 3), benchDeps(b, m)
		convs := loop.NewConvs(log, nil)
		ctx := context.Background()
		deps.Crew = loop.Agents{"master": agent}
		w, err := loop.StartWorker(ctx, loop.WorkerConfig{Log: log, Convs: convs, Deps: deps})
		if err != nil {
			b.Fatal(err)
		}
		in := &inbound.Inbound{Convs: convs, Kick: w, Master: "master", Crew: deps.Crew,
			Clock: loop.WallClock{Zone: time.UTC}}
		b.StartTimer()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				_, err := in.Receive(ctx, inbound.Message{Text: "go", Channel: fmt.Sprintf("bench:%d", i)})
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		eventstest.EventuallyWithin(b, 10*time.Minute, "the turns to finish", w.Idle)
		b.StopTimer()
		w.Close()
		held = convs.Loaded()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = ms.HeapInuse
		answered := 0
		for i := range n {
			st, err := loop.LoadState(ctx, log, nil, inbound.DailyID("master", "master", fmt.Sprintf("bench:%d", i), time.Now().UTC()))
			if err != nil {
				b.Fatal(err)
			}
			if len(st.Queued) == 0 && st.OpenRun == "" && len(st.Messages) == 6 && st.Messages[5].Text == "done" {
				answered++
			}
		}
		if answered != n {
			b.Fatalf("%d of %d conversations answered", answered, n)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "conversations/s")
	b.ReportMetric(float64(held), "states-held")
	b.ReportMetric(float64(heap>>20), "heap-MB")
}
