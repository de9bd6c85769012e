package search

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// The index's merges keep every segment within MaxSegmentDocs (here
// 1,000 documents, three feed batches' worth): no merge reads or builds
// more, whatever the home's size; and the hits are those of an index
// whose merges are bound only by bleve's default.
func TestRecallSegmentsStayWithinTheirBound(t *testing.T) {
	_, log := eventstest.Start(t)
	last := genHome(t, log, 3000) // 6,000 documents, fed 500 events a batch
	const bound = 1000
	small := feedOpen(t, log, last, bound)
	large := feedOpen(t, log, last, 5_000_000)
	r, err := small.idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	reader, err := r.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	snap, ok := reader.(*scorch.IndexSnapshot)
	if !ok {
		t.Fatalf("the index is %T, not scorch", reader)
	}
	var docs uint64
	for _, seg := range snap.Segments() {
		if n := seg.Count(); n > bound {
			t.Errorf("a segment of %d documents, over the bound %d", n, bound)
		}
		docs += seg.Count()
	}
	if docs < 6000 || len(snap.Segments()) < 6000/bound {
		t.Fatalf("%d documents in %d segments, want ≥ 6000 in ≥ %d", docs, len(snap.Segments()), 6000/bound)
	}
	for _, q := range append(recallQueries, needleQuery) {
		a, b := find(t, small, Query{Text: q}), find(t, large, Query{Text: q})
		if len(a) == 0 {
			t.Errorf("%q: no hits", q)
		}
		if ids(a) != ids(b) {
			t.Errorf("%q:\n bounded segments %s\n default          %s", q, ids(a), ids(b))
		}
	}
}

// feedOpen is feed of an index whose segments hold at most maxDocs
// documents.
func feedOpen(t *testing.T, log *events.Log, last uint64, maxDocs int64) *Index {
	t.Helper()
	x, err := open(t.TempDir(), maxDocs)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Start(x, log, log.Redactor(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(); x.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := f.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	return x
}
