package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// BenchmarkServeMillionEvents measures crew serve on a home holding a
// million events (CREW_BENCH_EVENTS changes the count): 50-turn
// conversations of message, run_started, model_called, run_finished,
// written with the events package. It starts serve twice: with the
// projections at zero (as after an upgrade or `crew projections rebuild`),
// timing the first HTTP answer, the catch-up and the RSS, then with them
// caught up, timing /healthz 200 from process start and the RSS 10 s
// after. Opt-in (minutes): go test -run '^$' -bench ServeMillionEvents
// -benchtime 1x -timeout 60m ./cmd/crew/ (CREW_BENCH_HOME=<dir> keeps the
// home for the next run).
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
		srv, err := events.StartServer(events.ServerConfig{StoreDir: filepath.Join(home, "data", "nats"), Sync: events.SyncInterval})
		if err != nil {
			b.Fatal(err)
		}
		log, err := events.Open(context.Background(), srv.Conn(), nil)
		if err != nil {
			b.Fatal(err)
		}
		last, err := eventstest.Populate(context.Background(), log, "master", convs, turns)
		srv.Close()
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
	last := storedEvents(b, home)

	for b.Loop() {
		// A home just written (by this run) is started within the
		// stream's duplicate window, as after a crash right after a burst.
		b.Logf("home written %s before the first start", time.Since(written).Round(time.Second))
		cold := timeServe(b, home, 10*time.Second)
		b.Logf("projections at zero: first HTTP answer %s after process start, /healthz 200 after %s (%.0f events/s, CPU %s), peak RSS %d MB, RSS 10 s after ready %d MB",
			cold.firstAnswer.Round(time.Millisecond), cold.ready.Round(time.Millisecond), float64(last)/cold.ready.Seconds(), cold.cpu.Round(time.Millisecond), cold.peakRSS>>20, cold.settledRSS>>20)
		warm := timeServe(b, home, 10*time.Second)
		b.Logf("projections caught up: /healthz 200 after %s from process start (CPU %s), RSS 10 s after ready %d MB (peak %d MB)",
			warm.ready.Round(time.Millisecond), warm.cpu.Round(time.Millisecond), warm.settledRSS>>20, warm.peakRSS>>20)
		b.Logf("load average at the end: %s", loadAverage())
		b.ReportMetric(cold.ready.Seconds(), "catchup-s")
		b.ReportMetric(cold.cpu.Seconds(), "catchup-cpu-s")
		b.ReportMetric(float64(last)/cold.ready.Seconds(), "catchup-events/s")
		b.ReportMetric(float64(warm.ready.Milliseconds()), "warm-ready-ms")
		b.ReportMetric(float64(warm.settledRSS>>20), "idle-RSS-MB")
		b.ReportMetric(float64(cold.peakRSS>>20), "catchup-peak-RSS-MB")
		b.ReportMetric(float64(cold.settledRSS>>20), "caught-up-RSS-MB")
	}
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

type serveRun struct {
	firstAnswer, ready  time.Duration
	peakRSS, settledRSS int64
	// cpu is the process's CPU time (user + system) when it was ready:
	// what the run cost whatever else the machine was doing.
	cpu time.Duration
}

// timeServe starts crew serve on home, waits for /healthz 200 (sampling its
// RSS), waits settle more, and stops it.
func timeServe(b *testing.B, home string, settle time.Duration) serveRun {
	b.Helper()
	cmd := exec.Command(crewBin, "serve", "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "CREW_HOME="+home)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	var run serveRun
	var url string
	for url == "" {
		select {
		case url = <-urls:
		case <-time.After(time.Millisecond):
			run.peakRSS = max(run.peakRSS, rss(cmd.Process.Pid))
			if time.Since(began) > 10*time.Minute {
				b.Fatal("no URL in 10 minutes")
			}
		}
	}
	client := &http.Client{Timeout: 5 * time.Second}
	for sample := time.Now(); ; time.Sleep(2 * time.Millisecond) {
		resp, err := client.Get(url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if run.firstAnswer == 0 {
				run.firstAnswer = time.Since(began)
			}
			if resp.StatusCode == http.StatusOK {
				run.ready = time.Since(began)
				run.cpu = cpuTime(cmd.Process.Pid)
				break
			}
		}
		if time.Since(sample) > 500*time.Millisecond {
			run.peakRSS, sample = max(run.peakRSS, rss(cmd.Process.Pid)), time.Now()
		}
		if time.Since(began) > 30*time.Minute {
			b.Fatal("not ready in 30 minutes")
		}
	}
	if settle > 0 {
		time.Sleep(settle)
		run.settledRSS = rss(cmd.Process.Pid)
	}
	run.peakRSS = max(run.peakRSS, rss(cmd.Process.Pid))
	return run
}

// rss is the resident set of process pid in bytes (0 if unreadable).
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
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
