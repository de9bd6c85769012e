package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/nats-io/nats.go"
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
	opts.Getenv, opts.Models = getenv, llm.ModelsFunc(func(string) (llm.Model, error) { return m, nil })
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
// events (stored; with sync=always fsynced once per decision, ADR 0008),
// a workspace_glob, state
// upkeep. One op is one step; turns are 10 steps on fresh conversations,
// as in use. p50/p99 are per-step latencies.
func BenchmarkToolStep(b *testing.B) {
	b.Run("raw_fsync", rawFsync)
	for _, syncMode := range []string{events.SyncAlways, events.SyncInterval} {
		b.Run(syncMode, func(b *testing.B) { toolStep(b, syncMode, Options{NoWorker: true}) }) // the turn runs here
	}
}

// toolStep is one BenchmarkToolStep run with sync mode syncMode on the
// App opts open.
func toolStep(b *testing.B, syncMode string, opts Options) {
	const steps = 10
	m := &stepModel{steps: steps}
	a := benchApp(b, syncMode, m, opts)
	agent, ok := a.Crew.Agent(home.MasterID)
	if !ok {
		b.Fatal("no master agent")
	}
	agent.MaxSteps = steps + 1
	ctx := context.Background()
	done := 0
	var lat []time.Duration
	var ids []string
	seq0, fsyncs0, commits0 := lastSeq(b, a), a.Log().Fsyncs(), a.Runner.Commits()
	cpu0 := processCPU(b)
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
		ids = append(ids, conv.ID())
		for j := 1; j < len(m.at); j++ {
			lat = append(lat, m.at[j].Sub(m.at[j-1]))
		}
		done += steps
	}
	b.StopTimer()
	// The CPU the whole process spent (every goroutine: the turn, the
	// server, the projections, the collector), less noisy than the
	// latencies on a shared machine.
	cpu := processCPU(b) - cpu0
	// Every conversation answered once: its one run finished, its
	// answer the last message (a step lost or stored twice shows).
	for _, id := range ids {
		if ok, runs := answeredOnceIn(b, a, id, steps); !ok {
			b.Fatalf("%s not answered once: %d runs finished", id, runs)
		}
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(done), "cpu-ms/step")
	// The stream's stored messages: the turn's own (opening, run start
	// and end: 0.3 a step here) included.
	b.ReportMetric(float64(lastSeq(b, a)-seq0)/float64(done), "msgs/step")
	// The fsyncs the log made (ADR 0008: one per decision, shared
	// by appends at the same moment; none with interval).
	b.ReportMetric(float64(a.Log().Fsyncs()-fsyncs0)/float64(done), "fsyncs/step")
	// The projections' bbolt transactions beside the steps (a
	// step's live events share one while nobody waits for them).
	b.ReportMetric(float64(a.Runner.Commits()-commits0)/float64(done), "proj-commits/step")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms/step")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms/step")
}

// BenchmarkConcurrentConversations: 1,000 conversations at once (sync
// always), each a 3-step turn, through the App's inbound door and worker
// (ledger included), with the default limits (idle states, turns in
// flight). It fails on any error, any failed pass, any conversation left
// unanswered or answered twice, and reports the states held, the heap
// (after a GC), the peak RSS of the run, the p50/p99 time from a
// message's acceptance (the 202 of /api/inbound) to its reply stored,
// and the load average at the start and the end.
//
// Opt-in (see docs/performance.md): CREW_BENCH_CONVERSATIONS=N adds a run
// of N with sync interval, CREW_BENCH_CONVERSATIONS_ALWAYS=M one of M
// with sync always; CREW_BENCH_NOISE=1 runs a CPU-bound process (one
// spinning thread per core) beside every run, killed at its end.
func BenchmarkConcurrentConversations(b *testing.B) {
	b.Run("1000", func(b *testing.B) { concurrentConversations(b, 1000, events.SyncAlways) })
	if n, err := strconv.Atoi(os.Getenv("CREW_BENCH_CONVERSATIONS")); err == nil && n > 0 {
		b.Run(fmt.Sprintf("%d_interval", n), func(b *testing.B) { concurrentConversations(b, n, events.SyncInterval) })
	}
	if n, err := strconv.Atoi(os.Getenv("CREW_BENCH_CONVERSATIONS_ALWAYS")); err == nil && n > 0 {
		b.Run(fmt.Sprintf("%d_always", n), func(b *testing.B) { concurrentConversations(b, n, events.SyncAlways) })
	}
}

// noiseEnv makes the test binary a CPU-bound process instead
// (startNoise).
const noiseEnv = "CREW_BENCH_NOISE_CHILD"

// TestMain lets the benchmark start this binary as its noise: a process
// spinning one thread per core for at most 30 minutes.
func TestMain(m *testing.M) {
	if os.Getenv(noiseEnv) == "1" {
		stop := time.Now().Add(30 * time.Minute)
		for range runtime.NumCPU() - 1 {
			go spin(stop)
		}
		spin(stop)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func spin(until time.Time) {
	for x := 0; time.Now().Before(until); x++ {
		for range 1_000_000 {
			x ^= x<<1 + 1
		}
	}
}

// startNoise starts the CPU-bound process beside the benchmark when
// CREW_BENCH_NOISE=1; it is killed when the benchmark ends.
func startNoise(b *testing.B) {
	if os.Getenv("CREW_BENCH_NOISE") != "1" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), noiseEnv+"=1")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
}

// loadAverage is the 1-minute load average now.
func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(raw))[0], 64)
	return f
}

// peakRSS is this process's peak resident set (VmHWM) in MB;
// resetPeakRSS starts it again from the current RSS.
func peakRSS() float64 { return procStatusMB("VmHWM:") }

// currentRSS is this process's resident set (VmRSS) in MB.
func currentRSS() float64 { return procStatusMB("VmRSS:") }

// procStatusMB is the field of /proc/self/status (in kB there) in MB.
func procStatusMB(field string) float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return -1
}

func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// heapAtPeak writes the heap profile to $CREW_BENCH_HEAPPROFILE each time
// the resident set is seen 5% higher than before (looked at twice a
// second), so the file holds what the heap held nearest the run's peak;
// the func it returns stops looking.
func heapAtPeak(b *testing.B) func() {
	path := os.Getenv("CREW_BENCH_HEAPPROFILE")
	if path == "" {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		high := 0.0
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if rss := currentRSS(); rss > high*1.05 {
				high = rss
				f, err := os.Create(path)
				if err != nil {
					b.Error(err)
					return
				}
				pprof.WriteHeapProfile(f)
				f.Close()
				b.Logf("heap profile at RSS %.0f MB", rss)
			}
		}
	}()
	return func() { close(done); <-stopped }
}

func concurrentConversations(b *testing.B, n int, syncMode string) {
	startNoise(b)
	var held int
	var heap uint64
	var waits []time.Duration
	loadStart := loadAverage()
	var peak float64
	var refused atomic.Int64 // 503s answered (and sent again)
	// Under the soft memory limit crew serve runs with by default
	// (memory_limit_mb), as a user's process is; the limit is the
	// process's, so it is put back after.
	prevLimit := debug.SetMemoryLimit(-1)
	b.Cleanup(func() { debug.SetMemoryLimit(prevLimit) })
	for b.Loop() {
		b.StopTimer()
		a := benchApp(b, syncMode, &stepModel{steps: 3}, Options{MemoryLimit: home.DefaultMemoryLimitMB << 20})
		ctx := context.Background()
		// When each conversation's reply was stored: its run_finished.
		var mu sync.Mutex
		finished := map[string]time.Time{}
		twice := map[string]int{}
		sub, err := a.Conn().Subscribe(events.Root+".conv.*."+events.TypeRunFinished, func(m *nats.Msg) {
			id := events.ScopeOf(m.Subject).ID()
			mu.Lock()
			if _, seen := finished[id]; seen {
				twice[id]++
			} else {
				finished[id] = time.Now()
			}
			mu.Unlock()
		})
		if err != nil {
			b.Fatal(err)
		}
		accepted := make([]time.Time, n)
		ids := make([]string, n)
		runtime.GC()
		resetPeakRSS()
		stopProfile := heapAtPeak(b)
		b.StartTimer()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				// As a client of /api/inbound does: a 503 (not stored,
				// Retry-After) is sent again after the wait it names.
				for try := 0; ; try++ {
					acc, err := a.Inbound.Receive(ctx, inbound.Message{Text: "go", Channel: fmt.Sprintf("bench:%d", i)})
					if d := inbound.RetryAfter(err); d > 0 && try < 10 {
						refused.Add(1)
						time.Sleep(d)
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					accepted[i], ids[i] = time.Now(), acc.ConversationID
					return
				}
			})
		}
		wg.Wait()
		close(errs)
		if len(errs) > 0 {
			b.Fatalf("%d of %d messages not accepted, the first: %v", len(errs), n, <-errs)
		}
		stopProgress := progress(b, n, func() int { mu.Lock(); defer mu.Unlock(); return len(finished) })
		eventstest.EventuallyWithin(b, 40*time.Minute, "the turns to finish", a.Worker.Idle)
		stopProgress()
		b.StopTimer()
		stopProfile()
		peak = max(peak, peakRSS())
		sub.Unsubscribe()
		if s := a.Worker.Stats(); s.FailedPasses > 0 {
			b.Fatalf("%d passes failed (the App's log has each: CREW_BENCH_LOG=1)", s.FailedPasses)
		}
		held = a.Convs.Loaded()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = ms.HeapInuse
		answered := 0
		for i, id := range ids {
			ok, runs := answeredOnce(b, a, id)
			if runs > 1 || twice[id] > 0 {
				b.Fatalf("%s answered %d times", id, max(runs, twice[id]+1))
			}
			if ok {
				answered++
			}
			mu.Lock()
			at, ok := finished[id]
			mu.Unlock()
			if ok {
				waits = append(waits, at.Sub(accepted[i]))
			}
		}
		if answered != n {
			b.Fatalf("%d of %d conversations answered once (lost: %d)", answered, n, n-answered)
		}
		a.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "conversations/s")
	b.ReportMetric(float64(held), "states-held")
	b.ReportMetric(float64(heap>>20), "heap-MB")
	b.ReportMetric(peak, "peak-RSS-MB")
	slices.Sort(waits)
	if len(waits) > 0 {
		b.ReportMetric(waits[len(waits)/2].Seconds(), "p50-s-202-to-reply")
		b.ReportMetric(waits[len(waits)*99/100].Seconds(), "p99-s-202-to-reply")
	}
	b.ReportMetric(float64(refused.Load()), "503s-sent-again")
	b.ReportMetric(loadStart, "load-start")
	b.ReportMetric(loadAverage(), "load-end")
}

// progress logs, with CREW_BENCH_LOG set, how many of n conversations
// were answered so far, every 30 s, and the turn worker's counters.
func progress(b *testing.B, n int, answered func() int) func() {
	if os.Getenv("CREW_BENCH_LOG") == "" {
		return func() {}
	}
	done := make(chan struct{})
	start := time.Now()
	go func() {
		tick := time.NewTicker(30 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				fmt.Fprintf(os.Stderr, "bench: %s: %d of %d answered, load %.1f, RSS %.0f MB\n",
					time.Since(start).Round(time.Second), answered(), n, loadAverage(), currentRSS())
			}
		}
	}()
	return func() { close(done) }
}

// answeredOnce says whether the one-message conversation id had its
// 3-step turn answered ("done" its last message, nothing queued, no run
// open) and how many runs of it finished.
func answeredOnce(tb testing.TB, a *App, id string) (bool, int) {
	return answeredOnceIn(tb, a, id, 3)
}

// answeredOnceIn is answeredOnce of a turn of steps steps: the message,
// steps-1 tool calls with their results, the answer.
func answeredOnceIn(tb testing.TB, a *App, id string, steps int) (bool, int) {
	tb.Helper()
	ctx := context.Background()
	st, err := loop.LoadState(ctx, a.Log(), nil, id)
	if err != nil {
		tb.Fatal(err)
	}
	runs := 0
	for _, err := range a.Log().Read(ctx, events.Conv(id).Subject(events.TypeRunFinished), 0) {
		if err != nil {
			tb.Fatal(err)
		}
		runs++
	}
	ok := len(st.Queued) == 0 && st.OpenRun == "" && runs == 1 && len(st.Messages) == 2*steps && st.Messages[2*steps-1].Text == "done"
	return ok, runs
}

// processCPU is the user and system CPU time this process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// lastSeq is the stream's last sequence: messages stored so far.
func lastSeq(b testing.TB, a *App) uint64 {
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
