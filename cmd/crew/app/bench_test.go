package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/nats-io/nuid"
)

// The harness's overhead measured through the App: the crew serve builds
// (the master agent of a fresh home with its files, the registry, the
// budget ledger around every model call, the live feed, the notes), with
// only the model scripted. gateways/inbound's benchmarks of the same
// names measure the loop alone (a no-op tool, no ledger) beside them.

// stepModel answers by the history it is sent: while fewer than steps
// assistant messages exist since the last user message it asks for
// workspace_glob of a pattern nothing matches (new arguments each time,
// so the loop guard stays quiet), then answers. Stateless, so any number
// of conversations can share it.
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
		rep.ToolCalls = []llm.ToolCall{{ID: nuid.Next(), Name: "workspace_glob", Arguments: fmt.Sprintf(`{"pattern":"notes-%d-*.md"}`, n)}}
	} else {
		rep.Text = "done"
	}
	return rep, nil
}

// benchApp opens the App (as opts say) on a fresh home with sync mode
// syncMode, every agent on one route that m answers.
func benchApp(b testing.TB, syncMode string, m llm.Model, opts Options) *App {
	b.Helper()
	dir := b.TempDir()
	if _, err := home.Init(dir); err != nil {
		b.Fatal(err)
	}
	h, err := home.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	h.Config.NATS.Sync = syncMode
	getenv := func(k string) string {
		if k == "MY_AGENT_ROUTES" {
			return "fake:echo"
		}
		return ""
	}
	opts.Getenv, opts.Models = getenv, func(string) (llm.Model, error) { return m, nil }
	if os.Getenv("CREW_BENCH_LOG") != "" {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	a, err := Open(b.Context(), dir, h, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	return a
}

// BenchmarkToolStep measures the harness's overhead per tool step through
// the App: prompt assembly from the agent's files, the budget
// reservation and settlement, the model-call, tool-call and tool-result
// events (stored, fsynced with sync=always), a workspace_glob, state
// upkeep. One op is one step; turns are 10 steps on fresh conversations,
// as in use. p50/p99 are per-step latencies.
func BenchmarkToolStep(b *testing.B) {
	b.Run("raw_fsync", rawFsync)
	for _, syncMode := range []string{events.SyncAlways, events.SyncInterval} {
		b.Run(syncMode, func(b *testing.B) {
			const steps = 10
			m := &stepModel{steps: steps}
			a := benchApp(b, syncMode, m, Options{NoWorker: true}) // the turn runs here
			agent, ok := a.Crew.Agent(home.MasterID)
			if !ok {
				b.Fatal("no master agent")
			}
			agent.MaxSteps = steps + 1
			ctx := context.Background()
			done := 0
			var lat []time.Duration
			seq0 := lastSeq(b, a)
			b.ResetTimer()
			for i := 0; done < b.N; i++ {
				conv, err := a.Convs.Get(ctx, fmt.Sprint("bench-", i))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := conv.Append(ctx, func(*loop.State) ([]events.Event, error) {
					return []events.Event{&events.ConversationOpened{Agent: home.MasterID, Channel: "web"}, &events.MessageReceived{Channel: "web", Text: "go"}}, nil
				}); err != nil {
					b.Fatal(err)
				}
				m.mu.Lock()
				m.at = m.at[:0]
				m.mu.Unlock()
				if err := loop.NewTurn(agent, a.Deps, conv).Run(ctx); err != nil {
					b.Fatal(err)
				}
				if len(m.at) != steps {
					b.Fatalf("the turn called the model %d times, want %d", len(m.at), steps)
				}
				for j := 1; j < len(m.at); j++ {
					lat = append(lat, m.at[j].Sub(m.at[j-1]))
				}
				done += steps
			}
			b.StopTimer()
			// Every stored message is an fsync with sync=always: the turn's
			// own (opening, run start and end: 0.4 a step here) included.
			b.ReportMetric(float64(lastSeq(b, a)-seq0)/float64(done), "msgs/step")
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms/step")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms/step")
		})
	}
}

// BenchmarkConcurrentConversations: 1,000 conversations at once, each a
// 3-step turn, through the App's inbound door and worker (ledger
// included), with the default limit of idle states in memory. It fails
// on any error or any message left unanswered, and reports the states
// held and the heap (after a GC) once every turn has finished.
//
// CREW_BENCH_CONVERSATIONS=N adds a run of that many with sync interval
// (opt-in: see docs/performance.md).
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
		a := benchApp(b, syncMode, &stepModel{steps: 3}, Options{})
		ctx := context.Background()
		b.StartTimer()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				_, err := a.Inbound.Receive(ctx, inbound.Message{Text: "go", Channel: fmt.Sprintf("bench:%d", i)})
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
		eventstest.EventuallyWithin(b, 10*time.Minute, "the turns to finish", a.Worker.Idle)
		b.StopTimer()
		held = a.Convs.Loaded()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = ms.HeapInuse
		answered := 0
		for i := range n {
			st, err := loop.LoadState(ctx, a.Log(), nil, inbound.DailyID(home.MasterID, home.MasterID, fmt.Sprintf("bench:%d", i), time.Now().In(a.Home.Config.Location())))
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
		a.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "conversations/s")
	b.ReportMetric(float64(held), "states-held")
	b.ReportMetric(float64(heap>>20), "heap-MB")
}

// lastSeq is the stream's last sequence: messages stored so far.
func lastSeq(b *testing.B, a *App) uint64 {
	info, err := a.Log().Stream().Info(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return info.State.LastSeq
}

// rawFsync is the raw cost of what sync=always pays per stored message on
// the disk the benchmark's homes are on, measured in the same run: one op
// is a 512-byte write and an fsync of a file in the temp dir; p50, p99.
func rawFsync(b *testing.B) {
	f, err := os.CreateTemp(b.TempDir(), "fsync-*")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 512)
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms/fsync")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms/fsync")
}
