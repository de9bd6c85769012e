package search

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// The pages of the index's segment files that queries touched count in
// the process's resident set until ReleaseMapped hands them back, and
// every query finds the same after.
func TestReleaseMappedDropsTheSegmentPages(t *testing.T) {
	_, log := eventstest.Start(t)
	last := genHome(t, log, 3000)
	// Segments of at most 2 documents never merge: after the feed, the
	// segments mapped are those the index holds once each is persisted.
	x := feedOpen(t, log, last, 2)
	eventstest.EventuallyWithin(t, time.Minute, "every segment persisted", func() bool { return persisted(t, x) })
	dir, err := filepath.EvalSymlinks(x.Dir())
	if err != nil {
		t.Fatal(err)
	}
	query := func() []string {
		var got []string
		for _, q := range append(recallQueries, needleQuery, "banana oats water") {
			got = append(got, ids(find(t, x, Query{Text: q})))
		}
		return got
	}
	before := query()
	touched := segmentRSS(t, dir)
	if touched < 256<<10 {
		t.Fatalf("queries left %d KB of the segments resident: the test cannot see a release", touched>>10)
	}
	if err := x.ReleaseMapped(); err != nil {
		t.Fatal(err)
	}
	if after := segmentRSS(t, dir); after > touched/8 {
		t.Fatalf("after ReleaseMapped %d KB of the segments stay resident (%d KB before)", after>>10, touched>>10)
	}
	after := query() // faulted in again, the same
	for i := range before {
		if before[i] != after[i] {
			t.Errorf("query %d: %s after the release, %s before", i, after[i], before[i])
		}
	}
}

// persisted reports whether every segment of x is in its file.
func persisted(t *testing.T, x *Index) bool {
	t.Helper()
	ix, err := x.idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	r, err := ix.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, s := range r.(*scorch.IndexSnapshot).Segments() {
		if p, ok := s.Segment().(interface{ Path() string }); !ok || p.Path() == "" {
			return false
		}
	}
	return true
}

// segmentRSS is the resident size of this process's mappings of the
// .zap files under dir (/proc/self/smaps).
func segmentRSS(t *testing.T, dir string) int64 {
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
			in = len(fields) >= 6 && strings.HasPrefix(fields[5], dir+"/") && strings.HasSuffix(fields[5], ".zap")
			continue
		}
		if rest, ok := strings.CutPrefix(line, "Rss:"); in && ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			total += kb << 10
		}
	}
	return total
}
