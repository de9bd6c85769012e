package main

import (
	"context"
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

// BenchmarkViewManyConversations opens 10,000 conversations
// (CREW_BENCH_CONVERSATIONS changes the count) one after another through
// the chat pages of a real crew serve, GET /c/{id} as a browser does,
// and fails unless the process's RSS afterwards stays under twice its
// idle RSS (after the first 100 pages), or a page misses its
// conversation's reply. The home holds 3-turn conversations written with
// the events package (CREW_BENCH_HOME=<dir> keeps it for the next run):
//
//	go test -run '^$' -bench ViewManyConversations -benchtime 1x -timeout 30m ./cmd/crew/
func BenchmarkViewManyConversations(b *testing.B) {
	n := 10_000
	if v, err := strconv.Atoi(os.Getenv("CREW_BENCH_CONVERSATIONS")); err == nil && v > 0 {
		n = v
	}
	const turns = 3
	home := os.Getenv("CREW_BENCH_HOME")
	if home == "" {
		home = filepath.Join(b.TempDir(), "home")
	}
	if _, err := os.Stat(filepath.Join(home, "config.yaml")); err != nil {
		if out, err := exec.Command(crewBin, "init", "--home", home).CombinedOutput(); err != nil {
			b.Fatalf("init: %v\n%s", err, out)
		}
		srv, err := events.StartServer(events.ServerConfig{StoreDir: filepath.Join(home, "data", "nats"), Sync: events.SyncInterval})
		if err != nil {
			b.Fatal(err)
		}
		log, err := events.Open(context.Background(), srv.Conn(), nil)
		if err != nil {
			b.Fatal(err)
		}
		_, err = eventstest.Populate(context.Background(), log, "master", n, turns)
		srv.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		s := benchServe(b, home)
		client := &http.Client{Timeout: time.Minute}
		view := func(i int) {
			id := fmt.Sprintf("c%06d", i)
			resp, err := client.Get(s.url + "/c/" + id)
			if err != nil {
				b.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("GET /c/%s: %d %v\n%.500s", id, resp.StatusCode, err, body)
			}
			// Populate's reply, once per turn: the page shows the whole
			// conversation, no turn lost or shown twice.
			if got := strings.Count(string(body), "Oats with a banana"); got != turns {
				b.Fatalf("GET /c/%s shows the reply %d times, want %d", id, got, turns)
			}
		}
		waitQuiet(b, s.pid)
		for i := range min(100, n) {
			view(i)
		}
		waitQuiet(b, s.pid)
		idle, idleFiles := memOf(s.pid), rss(s.pid).withFiles(s.pid)
		start := time.Now()
		for i := range n {
			view(i)
		}
		took := time.Since(start)
		waitQuiet(b, s.pid)
		after := memOf(s.pid)
		b.Logf("%d conversations viewed in %s (%.0f pages/s); RSS idle %s, after %s; load average %s",
			n, took.Round(time.Millisecond), float64(n)/took.Seconds(), idleFiles, rss(s.pid).withFiles(s.pid), loadAverage())
		b.ReportMetric(float64(idle.rss>>20), "idle-RSS-MB")
		b.ReportMetric(float64(after.rss>>20), "after-RSS-MB")
		b.ReportMetric(float64(after.anon>>20), "after-anon-MB")
		b.ReportMetric(float64(n)/took.Seconds(), "pages/s")
		s.stop()
		if after.rss >= 2*idle.rss {
			b.Fatalf("RSS after %d conversations %d MB, idle %d MB: not under twice", n, after.rss>>20, idle.rss>>20)
		}
	}
}

// benchServer is a crew serve child of a benchmark.
type benchServer struct {
	url  string
	pid  int
	stop func()
}

// benchServe starts crew serve on home and waits for /healthz 200; a
// child that exits fails the benchmark at once, with its stderr.
func benchServe(b *testing.B, home string) benchServer {
	b.Helper()
	s := launchServeWithin(b, home, 10*time.Minute)
	for deadline := time.Now().Add(30 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(s.url + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		s.failIfExited(b)
		if time.Now().After(deadline) {
			b.Fatal("not ready in 30 minutes")
		}
	}
	return benchServer{url: s.url, pid: s.cmd.Process.Pid, stop: func() { s.stop(b) }}
}

// waitQuiet waits until process pid has used under 5% of a core for 3
// seconds (the search index and projections caught up, the GC done) and
// its RSS has stopped falling (the runtime gives freed memory back to the
// system gradually), at most 30 minutes.
func waitQuiet(b *testing.B, pid int) {
	b.Helper()
	last := memOf(pid).rss
	for deadline := time.Now().Add(30 * time.Minute); time.Now().Before(deadline); {
		before := cpuTime(pid)
		time.Sleep(3 * time.Second)
		now := memOf(pid).rss
		if cpuTime(pid)-before < 150*time.Millisecond && now > last-(1<<20) {
			return
		}
		last = now
	}
	b.Fatal("crew serve not idle in 30 minutes")
}

type procMem struct{ rss, anon int64 }

// memOf is process pid's resident set, and the anonymous part of it (the
// rest is files mapped: the projections' and the search index's).
func memOf(pid int) procMem {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMem{}
	}
	var m procMem
	for line := range strings.SplitSeq(string(status), "\n") {
		field, rest, _ := strings.Cut(line, ":")
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		switch field {
		case "VmRSS":
			m.rss = kb << 10
		case "RssAnon":
			m.anon = kb << 10
		}
	}
	return m
}
