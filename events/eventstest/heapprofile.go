package eventstest

import (
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// HeapProfileEnv names the file the serve benchmarks' crew (the test
// build: cmd/crew/faults) writes its heap profiles to.
const HeapProfileEnv = "CREW_BENCH_HEAPPROFILE"

// HeapProfiles has this process write its heap profile to path each
// time its resident set is seen 5% above its highest so far (looked at
// twice a second), so path holds the heap nearest the peak, and to
// path.last every 5 s (the heap shortly before it stopped); each with
// path[.last].txt beside it, the same profile as text ending in the
// runtime's MemStats (heap in use, idle, released). It samples the heap
// finer than the runtime's default. An empty path does nothing.
func HeapProfiles(path string) {
	if path == "" {
		return
	}
	// One sample every 16 KiB allocated (512 KiB by default), so the few
	// MB left after a catch-up are told apart.
	runtime.MemProfileRate = 16 << 10
	go func() { // for the life of the process: the profile is of all of it
		high := int64(0)
		last := time.Now()
		for range time.Tick(500 * time.Millisecond) {
			if rss := selfRSS(); rss > high+high/20 {
				high = rss
				writeHeapProfile(path)
			}
			if time.Since(last) >= 5*time.Second {
				last = time.Now()
				writeHeapProfile(path + ".last")
			}
		}
	}()
}

// writeHeapProfile writes the heap profile to path (pprof's format) and
// path.txt (text, with MemStats); a failure leaves the files as they were.
func writeHeapProfile(path string) {
	for _, f := range []struct {
		name  string
		debug int
	}{{path, 0}, {path + ".txt", 1}} {
		tmp := f.name + ".tmp"
		out, err := os.Create(tmp)
		if err != nil {
			return
		}
		err = pprof.Lookup("heap").WriteTo(out, f.debug)
		if cerr := out.Close(); err == nil && cerr == nil {
			os.Rename(tmp, f.name)
		}
	}
}

// selfRSS is this process's VmRSS in bytes (0 if unreadable).
func selfRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
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
