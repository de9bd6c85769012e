package search

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// BenchmarkRecallCatchUp measures the search index catching up from zero
// with a home of 2,000 conversations × 12 turns (≈ 100k events, 48k
// documents: each turn's message and reply, one sentence repeated) and
// 2,000 conversations of distinct sentences (6k events, 4k documents),
// beside the raw read of the same log, then queries on that home
// (p50/p99 and CPU, of the repeated words and of distinct ones), the
// index's size on disk and the RSS it adds.
func BenchmarkRecallCatchUp(b *testing.B) {
	_, log := eventstest.Start(b)
	ctx := context.Background()
	if _, err := eventstest.Populate(ctx, log, "coach", 2000, 12); err != nil {
		b.Fatal(err)
	}
	// And 2,000 conversations of distinct sentences (a message and a
	// reply each, the radiator's among them), for queries that match a few
	// documents as a real home's do.
	last := genHome(b, log, 2000)
	b.Run("raw_read", func(b *testing.B) {
		var cpuSpent float64
		for b.Loop() {
			c0 := cpuSeconds()
			n := 0
			for _, err := range log.Read(ctx, events.Root+".>", 1) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if uint64(n) != last {
				b.Fatalf("read %d of %d", n, last)
			}
			cpuSpent += cpuSeconds() - c0
		}
		b.ReportMetric(float64(last)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(last)*float64(b.N)/cpuSpent, "events/cpu_s")
	})
	b.Run("index", func(b *testing.B) {
		var dir string
		var rssBefore, rssAfter int64
		var cpuSpent float64
		for b.Loop() {
			b.StopTimer()
			dir = b.TempDir()
			runtime.GC()
			rssBefore = rss()
			c0 := cpuSeconds()
			b.StartTimer()
			if _, err := Rebuild(ctx, dir, log, nil); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			cpuSpent += cpuSeconds() - c0
			rssAfter = rss()
			b.StartTimer()
		}
		b.ReportMetric(float64(last)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		// Per CPU second (the process's, background merges included): what
		// a loaded machine does not blur.
		b.ReportMetric(float64(last)*float64(b.N)/cpuSpent, "events/cpu_s")
		b.ReportMetric(float64(dirSize(dir))/(1<<20), "MiB_on_disk")
		b.ReportMetric(float64(rssAfter-rssBefore)/(1<<20), "MiB_RSS_added")
		x, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		defer x.Close()
		queries := []string{"what should I eat", "oats banana", "race day water", "simple question tomorrow", "nothing new",
			"Question 7", "two hours before", "keep it simple", "banana", "run"}
		measure := func(queries []string, name string) {
			var lat []time.Duration
			var qcpu float64
			for i := range 200 {
				start, c0 := time.Now(), cpuSeconds()
				if _, err := x.Search(ctx, Query{Text: queries[i%len(queries)], Reach: []string{"agent:coach"}}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				qcpu += cpuSeconds() - c0
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, name+"_p50_ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, name+"_p99_ms")
			b.ReportMetric(qcpu*1000/200, name+"_cpu_ms")
		}
		// Words of the repeated sentences: every one of 48k documents
		// matches with one score, the worst case.
		measure(queries, "repeated")
		// Words of the distinct sentences: a few hundred documents each.
		measure(recallQueries, "distinct")
	})
}

func rss() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n << 10
		}
	}
	return 0
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// cpuSeconds is the CPU time the process has used, user and system.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}
