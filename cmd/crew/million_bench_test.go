package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// BenchmarkServeMillionEvents measures crew serve on a home holding a
// million events (CREW_BENCH_EVENTS changes the count): 50-turn
// conversations of message, run_started, model_called, run_finished,
// written with the events package. It starts serve three times: with the
// projections at zero (as after an upgrade or `crew projections rebuild`),
// timing the first HTTP answer and the catch-up, then waiting for the
// recall index to catch up too (it does so after the projections, in the
// background), with the peak RSS over both; then with everything caught
// up, timing /healthz 200 from process start and the RSS 10 s after; then
// right after a burst of 10,000 more events (within the stream's
// duplicate window, as after a crash right after a burst), the RSS 10 s
// after it caught up again. Each RSS is given with its anonymous and
// file-backed parts. After each start it reads a sample of the
// conversations (the first, the middle and the last Populate wrote, and
// the burst's first, middle and last) through GET /api/conversations/{id}
// and fails unless each holds every question Populate wrote, each
// answered once (checkPopulated). Opt-in (minutes): go test -run '^$' -bench
// ServeMillionEvents -benchtime 1x -timeout 60m ./cmd/crew/
// (CREW_BENCH_HOME=<dir> keeps the home for the next run;
// CREW_BENCH_RECALL_ZERO=1 starts the recall index at zero too;
// CREW_BENCH_HEAPPROFILE=<file> has each crew serve write its heap
// profiles, at its highest RSS and every 5 s, to <file>.cold, .warm and
// .burst, and <file>.<start>.last: see timeServe).
func BenchmarkServeMillionEvents(b *testing.B) {
	total := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("CREW_BENCH_EVENTS")); err == nil && v > 0 {
		total = v
	}
	const turns = 50
	convs := max(total/(1+4*turns), 1)
	// CREW_BENCH_HOME keeps the home (written once, reused by later runs).
	home := os.Getenv("CREW_BENCH_HOME")
	if home == "" {
		home = filepath.Join(b.TempDir(), "home")
	}
	var written time.Time // when the home's last event was stored
	if _, err := os.Stat(filepath.Join(home, "config.yaml")); err != nil {
		if out, err := exec.Command(crewBin, "init", "--home", home).CombinedOutput(); err != nil {
			b.Fatalf("init: %v\n%s", err, out)
		}
		start := time.Now()
		last, err := populate(home, 0, convs, turns)
		if err != nil {
			b.Fatal(err)
		}
		written = time.Now()
		b.Logf("home of %d events (%d conversations × %d turns) written in %s", last, convs, turns, time.Since(start).Round(time.Second))
	} else if fi, err := os.Stat(filepath.Join(home, "data", "nats")); err == nil {
		written = fi.ModTime()
	}
	// Projections at zero, as after an upgrade or a rebuild.
	if err := os.Remove(filepath.Join(home, "data", "projections.db")); err != nil && !os.IsNotExist(err) {
		b.Fatal(err)
	}
	if os.Getenv("CREW_BENCH_RECALL_ZERO") != "" {
		if err := os.RemoveAll(filepath.Join(home, "data", "search")); err != nil {
			b.Fatal(err)
		}
	}
	last := storedEvents(b, home)

	for b.Loop() {
		// A home just written (by this run) is started within the
		// stream's duplicate window, as after a crash right after a burst.
		if !written.IsZero() {
			b.Logf("home written %s before the first start", time.Since(written).Round(time.Second))
		}
		sample := []int{0, convs / 2, convs - 1}
		cold := timeServe(b, home, "cold", 10*time.Second, sample, turns)
		b.Logf("projections at zero: first HTTP answer %s after process start, /healthz 200 after %s (%.0f events/s, CPU %s), peak RSS %s",
			cold.firstAnswer.Round(time.Millisecond), cold.ready.Round(time.Millisecond), float64(last)/cold.ready.Seconds(), cold.cpu.Round(time.Millisecond), cold.peakAtReady)
		b.Logf("recall index: %d events behind at ready, caught up %s after process start (CPU %s); peak RSS after ready %s, over both catch-ups %s, RSS 10 s after %s",
			cold.recallLag, cold.recalled.Round(time.Millisecond), cold.recallCPU.Round(time.Millisecond), cold.peakAfterReady, cold.peak, cold.settled)
		warm := timeServe(b, home, "warm", 10*time.Second, sample, turns)
		b.Logf("everything caught up: /healthz 200 after %s from process start (CPU %s), RSS 10 s after ready %s (peak %s)",
			warm.ready.Round(time.Millisecond), warm.cpu.Round(time.Millisecond), warm.settled, warm.peak)
		// A burst, and serve started at once: within the duplicate window.
		first := convs + burstConvs*bursts(b, home)
		if _, err := populate(home, first, burstConvs, turns); err != nil {
			b.Fatal(err)
		}
		burstAt := time.Now()
		fresh := timeServe(b, home, "burst", 10*time.Second, append(sample, first, first+burstConvs/2, first+burstConvs-1), turns)
		b.Logf("started %s after a burst of %d events: /healthz 200 after %s, recall caught up after %s, RSS 10 s after %s (peak %s)",
			fresh.began.Sub(burstAt).Round(time.Millisecond), burstConvs*(1+4*turns), fresh.ready.Round(time.Millisecond), fresh.recalled.Round(time.Millisecond), fresh.settled, fresh.peak)
		b.Logf("load average at the end: %s", loadAverage())
		b.ReportMetric(cold.ready.Seconds(), "catchup-s")
		b.ReportMetric(cold.cpu.Seconds(), "catchup-cpu-s")
		b.ReportMetric(float64(last)/cold.ready.Seconds(), "catchup-events/s")
		b.ReportMetric(cold.recalled.Seconds(), "recall-caught-up-s")
		b.ReportMetric(float64(warm.ready.Milliseconds()), "warm-ready-ms")
		b.ReportMetric(float64(warm.settled.total>>20), "idle-RSS-MB")
		b.ReportMetric(float64(warm.settled.anon>>20), "idle-anon-MB")
		b.ReportMetric(float64(cold.peak.total>>20), "catchup-peak-RSS-MB")
		b.ReportMetric(float64(cold.peakAfterReady.total>>20), "recall-peak-RSS-MB")
		b.ReportMetric(float64(cold.settled.total>>20), "caught-up-RSS-MB")
		b.ReportMetric(float64(fresh.settled.total>>20), "after-burst-RSS-MB")
	}
}

// burstConvs is the conversations of the burst written before the last
// start: 10,050 events.
const burstConvs = 50

// bursts counts the bursts written into home so far (each run adds one,
// numbered on from the last).
func bursts(b *testing.B, home string) int {
	path := filepath.Join(home, "bench-bursts")
	old, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(old, '.'), 0o600); err != nil {
		b.Fatal(err)
	}
	return len(old)
}

// populate writes conversations first to first+convs-1 into home's log
// with the events package, serve stopped.
func populate(home string, first, convs, turns int) (uint64, error) {
	srv, err := events.StartServer(events.ServerConfig{StoreDir: filepath.Join(home, "data", "nats"), Sync: events.SyncInterval})
	if err != nil {
		return 0, err
	}
	defer srv.Close()
	log, err := events.Open(context.Background(), srv.Conn(), nil)
	if err != nil {
		return 0, err
	}
	return eventstest.PopulateFrom(context.Background(), log, "master", first, convs, turns)
}

// storedEvents is the last sequence of the home's stream.
func storedEvents(b *testing.B, home string) uint64 {
	srv, err := events.StartServer(events.ServerConfig{StoreDir: filepath.Join(home, "data", "nats"), Sync: events.SyncInterval})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	log, err := events.Open(context.Background(), srv.Conn(), nil)
	if err != nil {
		b.Fatal(err)
	}
	last, err := log.Last(context.Background(), events.Root+".>")
	if err != nil {
		b.Fatal(err)
	}
	return last
}

// resident is a process's resident set: all of it (VmRSS), its anonymous
// memory (heap, stacks: RssAnon) and its file-backed pages (the binary,
// the memory-mapped projections.db and index segments: RssFile, page
// cache the kernel can take back), and at a peak or the end which files
// those are (files).
type resident struct {
	total, anon, file int64
	files             string
}

func (r resident) String() string {
	s := fmt.Sprintf("%d MB (anonymous %d MB, file-backed %d MB", r.total>>20, r.anon>>20, r.file>>20)
	if r.files != "" {
		s += ": " + r.files
	}
	return s + ")"
}

// withFiles is r with the file-backed part of process pid's resident
// set by file: the binary, projections.db, the recall index's segments
// and the rest (from /proc/<pid>/smaps).
func (r resident) withFiles(pid int) resident {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return r
	}
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	var bin, db, index, other int64
	var path string
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-"): // a mapping's first line
			path = ""
			if len(f) >= 6 {
				path = f[5]
			}
		case len(f) == 3 && f[0] == "Rss:" && strings.HasPrefix(path, "/"):
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			switch {
			case path == exe:
				bin += kb << 10
			case strings.HasSuffix(path, "projections.db"):
				db += kb << 10
			case strings.Contains(path, "index.bleve"):
				index += kb << 10
			default:
				other += kb << 10
			}
		}
	}
	r.files = fmt.Sprintf("binary %d, projections.db %d, recall index %d, other %d", bin>>20, db>>20, index>>20, other>>20)
	return r
}

type serveRun struct {
	began               time.Time
	firstAnswer, ready  time.Duration
	peakAtReady         resident // the peak until /healthz said 200
	peakAfterReady      resident // the peak after it (the recall index catching up)
	peak, settled       resident // the peak until the end; 10 s after everything caught up
	recallLag           uint64   // events the recall index had left at ready
	recalled, recallCPU time.Duration
	// cpu is the process's CPU time (user + system) when it was ready:
	// what the run cost whatever else the machine was doing.
	cpu time.Duration
}

// timeServe starts crew serve on home, waits for /healthz 200, then for
// the recall index to catch up (sampling its RSS all along), waits settle
// more, checks that each conversation numbered in convs holds what
// Populate wrote for it, turns turns (checkConversations), and stops it.
// With CREW_BENCH_HEAPPROFILE=<file> the child (the
// test build) writes its heap profiles to <file>.<start>
// (eventstest.HeapProfiles).
func timeServe(b *testing.B, home, start string, settle time.Duration, convs []int, turns int) serveRun {
	b.Helper()
	var env []string
	if path := os.Getenv(eventstest.HeapProfileEnv); path != "" {
		env = append(env, eventstest.HeapProfileEnv+"="+path+"."+start)
	}
	began := time.Now()
	// The URL comes within a second or two whatever the lag; a child that
	// exits fails the run at once, with its stderr.
	s := launchServeWithin(b, home, 10*time.Minute, env...)
	defer s.stop(b)
	pid, url := s.cmd.Process.Pid, s.url
	run := serveRun{began: began}
	sample := func() {
		now := rss(pid)
		if now.total > run.peak.total {
			now = now.withFiles(pid)
			run.peak = now
		}
		if run.ready > 0 && now.total > run.peakAfterReady.total {
			run.peakAfterReady = now.withFiles(pid)
		}
	}
	sample()
	client := &http.Client{Timeout: 5 * time.Second}
	for sampled := time.Now(); ; time.Sleep(2 * time.Millisecond) {
		resp, err := client.Get(url + "/healthz")
		if err == nil {
			var h struct {
				Details struct {
					Recall *struct {
						Lag uint64 `json:"lag"`
					} `json:"recall"`
				} `json:"details"`
			}
			json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if run.firstAnswer == 0 {
				run.firstAnswer = time.Since(began)
			}
			if resp.StatusCode == http.StatusOK {
				run.ready = time.Since(began)
				run.cpu = cpuTime(pid)
				if h.Details.Recall == nil {
					b.Fatal("/healthz has no recall details")
				}
				run.recallLag = h.Details.Recall.Lag
				break
			}
		}
		if time.Since(sampled) > 500*time.Millisecond {
			sample()
			sampled = time.Now()
			s.failIfExited(b)
		}
		if time.Since(began) > 30*time.Minute {
			b.Fatal("not ready in 30 minutes")
		}
	}
	sample()
	run.peakAtReady = run.peak
	// The recall index catches up after the projections, in the
	// background; the process counts as caught up once it has.
	for lag := run.recallLag; lag > 0; time.Sleep(100 * time.Millisecond) {
		sample()
		s.failIfExited(b)
		resp, err := client.Get(url + "/healthz")
		if err != nil {
			b.Fatal(err)
		}
		var h struct {
			Details struct {
				Recall struct {
					Lag   uint64 `json:"lag"`
					Error string `json:"error"`
				} `json:"recall"`
			} `json:"details"`
		}
		err = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if err != nil || h.Details.Recall.Error != "" {
			b.Fatalf("recall index: %v %s", err, h.Details.Recall.Error)
		}
		lag = h.Details.Recall.Lag
		if time.Since(began) > 50*time.Minute {
			b.Fatalf("the recall index did not catch up in 50 minutes (%d events left)", lag)
		}
	}
	run.recalled = time.Since(began)
	run.recallCPU = cpuTime(pid) - run.cpu
	for end := time.Now().Add(settle); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		sample()
	}
	s.failIfExited(b)
	run.settled = rss(pid).withFiles(pid)
	run.peak = run.peak.max(run.settled)
	// After the RSS: reading them loads the conversations' states.
	if err := checkConversations(client, url, convs, turns); err != nil {
		b.Fatalf("%s start: %v", start, err)
	}
	return run
}

// historyMessage is a message of GET /api/conversations/{id}'s history,
// as far as checkPopulated looks.
type historyMessage struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// checkConversations reads the conversations numbered in convs through
// the server at url (GET /api/conversations/{id}) and checks each with
// checkPopulated: an error naming each conversation that is missing or
// holds other than what Populate wrote for it.
func checkConversations(client *http.Client, url string, convs []int, turns int) error {
	var errs []error
	for _, i := range convs {
		id := eventstest.PopulatedID(i)
		resp, err := client.Get(url + "/api/conversations/" + id)
		if err != nil {
			errs = append(errs, fmt.Errorf("conversation %s: %w", id, err))
			continue
		}
		var c struct {
			History []historyMessage `json:"history"`
		}
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
			err = fmt.Errorf("GET /api/conversations/%s: %s %s", id, resp.Status, body)
		} else if err = json.NewDecoder(resp.Body).Decode(&c); err == nil {
			err = checkPopulated(c.History, turns)
		}
		resp.Body.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("conversation %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// checkPopulated checks a conversation's history against what
// eventstest.PopulateFrom wrote for it: turns questions
// (eventstest.PopulatedTurn), in order, each followed by its answer once,
// and nothing else. The error says how many of each it holds, or the
// first message that differs.
func checkPopulated(history []historyMessage, turns int) error {
	var questions, answers int
	for _, m := range history {
		switch m.Role {
		case "user":
			questions++
		case "assistant":
			answers++
		}
	}
	if len(history) != 2*turns || questions != turns || answers != turns {
		return fmt.Errorf("%d messages (%d questions, %d answers), want %d questions each answered once", len(history), questions, answers, turns)
	}
	for i, m := range history {
		question, answer := eventstest.PopulatedTurn(i / 2)
		want := historyMessage{Role: "user", Text: question}
		if i%2 == 1 {
			want = historyMessage{Role: "assistant", Text: answer}
		}
		if m != want {
			return fmt.Errorf("message %d is %s %q, want %s %q", i, m.Role, m.Text, want.Role, want.Text)
		}
	}
	return nil
}

func (r resident) max(o resident) resident {
	if o.total > r.total {
		return o
	}
	return r
}

// rss is the resident set of process pid (zero if unreadable).
func rss(pid int) resident {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return resident{}
	}
	var r resident
	for line := range strings.SplitSeq(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		switch name {
		case "VmRSS":
			r.total = kb << 10
		case "RssAnon":
			r.anon = kb << 10
		case "RssFile", "RssShmem":
			r.file += kb << 10
		}
	}
	return r
}

// cpuTime is process pid's CPU time so far (user + system; 0 if
// unreadable).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command (in parentheses, which may hold spaces).
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok {
		return 0
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // clock ticks (USER_HZ = 100 on Linux)
}

// loadAverage is the 1, 5 and 15 minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
