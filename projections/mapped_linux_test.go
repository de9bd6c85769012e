package projections_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/my-agent-crew/crew/projections"
)

// TestReleaseMappedDropsTouchedPages: the pages of projections.db a read
// touched count in the process's resident set until ReleaseMapped hands
// them back, and every record reads the same after.
func TestReleaseMappedDropsTouchedPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "projections.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const records = 4000
	value := bytes.Repeat([]byte("x"), 2000) // ≈ 8 MB of records
	if err := db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket([]byte("r"))
		if err != nil {
			return err
		}
		for i := range records {
			if err := b.Put(fmt.Appendf(nil, "%06d", i), value); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	readAll := func() {
		t.Helper()
		if err := db.View(func(tx *bbolt.Tx) error {
			n := 0
			err := tx.Bucket([]byte("r")).ForEach(func(k, v []byte) error {
				if !bytes.Equal(v, value) {
					return fmt.Errorf("record %s reads %d bytes, not what was written", k, len(v))
				}
				n++
				return nil
			})
			if err == nil && n != records {
				err = fmt.Errorf("read %d records, want %d", n, records)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	readAll()
	touched := mappedRSS(t, path)
	if touched < 4<<20 {
		t.Fatalf("reading 8 MB of records left %d KB of the file resident: the test cannot see a release", touched>>10)
	}
	if err := projections.ReleaseMapped(db); err != nil {
		t.Fatal(err)
	}
	if after := mappedRSS(t, path); after > touched/8 {
		t.Fatalf("after ReleaseMapped %d KB of the file stay resident (%d KB before)", after>>10, touched>>10)
	}
	readAll() // faulted in again, the same
	if err := db.Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("r")).Put([]byte("new"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket([]byte("r")).Get([]byte("new")); string(v) != "v" {
			return fmt.Errorf("a record written after the release reads %q", v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// mappedRSS is the resident size of this process's mappings of path
// (/proc/self/smaps).
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if fields := strings.Fields(line); len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = len(fields) >= 6 && fields[len(fields)-1] == path
			continue
		}
		if rest, ok := strings.CutPrefix(line, "Rss:"); in && ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			total += kb << 10
		}
	}
	return total
}

// TestReleaseExecutableDropsTheBinarysPages: the pages of this test
// binary's code and read-only data that ran count in its resident set
// until ReleaseExecutable hands them back, and the code runs the same
// after (the pages come back from the page cache).
func TestReleaseExecutableDropsTheBinarysPages(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	before := exeResident(t, exe)
	if before < 1<<20 {
		t.Fatalf("%d KB of %s resident before: too little to tell", before>>10, exe)
	}
	if err := projections.ReleaseExecutable(); err != nil {
		t.Fatal(err)
	}
	after := exeResident(t, exe)
	t.Logf("%s resident: %d KB before, %d KB after", exe, before>>10, after>>10)
	if after > before/4 {
		t.Errorf("%s resident: %d KB before ReleaseExecutable, %d KB after; want under a quarter", exe, before>>10, after>>10)
	}
	// Code and data of the binary, faulted in again, work as before.
	if got := fmt.Sprintf("%06d %q", 42, strings.Repeat("ab", 2)); got != `000042 "abab"` {
		t.Errorf("after the release: %s", got)
	}
}

// exeResident is the resident set of the read-only mappings of exe in
// this process (/proc/self/smaps), in bytes.
func exeResident(t *testing.T, exe string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total int64
	ours := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			ours = len(fields) >= 6 && strings.Join(fields[5:], " ") == exe && fields[1][1] == '-'
			continue
		}
		if ours && len(fields) == 3 && fields[0] == "Rss:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			total += kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}

// BenchmarkReleaseExecutable is what serve's release tick costs beside
// what it saves: the call itself (ns/op, cpu-ms/op: reading smaps and the
// madvise) and the first bbolt write after it, which faults the code it
// runs in again (faults/write-after, cpu-ms/write-after), against the
// same write without a release before it (…-steady).
func BenchmarkReleaseExecutable(b *testing.B) {
	db, err := bbolt.Open(filepath.Join(b.TempDir(), "projections.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	n := 0
	write := func() (faults int64, cpu time.Duration) {
		f0, c0 := selfUsage()
		n++
		err := db.Update(func(tx *bbolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("r"))
			if err != nil {
				return err
			}
			v, err := json.Marshal(map[string]any{"n": n, "at": time.Unix(int64(n), 0)})
			if err != nil {
				return err
			}
			return bk.Put(fmt.Appendf(nil, "%08d", n), v)
		})
		if err != nil {
			b.Fatal(err)
		}
		f1, c1 := selfUsage()
		return f1 - f0, c1 - c0
	}
	for range 100 {
		write()
	}
	var steadyF, afterF int64
	var call, steadyC, afterC time.Duration
	for b.Loop() {
		f, c := write()
		steadyF, steadyC = steadyF+f, steadyC+c
		_, c0 := selfUsage()
		if err := projections.ReleaseExecutable(); err != nil {
			b.Fatal(err)
		}
		_, c1 := selfUsage()
		call += c1 - c0
		f, c = write()
		afterF, afterC = afterF+f, afterC+c
	}
	per := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(b.N) }
	b.ReportMetric(per(call), "cpu-ms/op")
	b.ReportMetric(float64(afterF)/float64(b.N), "faults/write-after")
	b.ReportMetric(per(afterC), "cpu-ms/write-after")
	b.ReportMetric(float64(steadyF)/float64(b.N), "faults/write-steady")
	b.ReportMetric(per(steadyC), "cpu-ms/write-steady")
}

// selfUsage is this process's minor page faults and CPU (user and
// system) so far.
func selfUsage() (int64, time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return ru.Minflt, time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
