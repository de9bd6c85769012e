package search

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"
)

// The index's segment files are memory-mapped by bleve, and every page a
// query, a catch-up or a merge reads stays mapped in the process: the
// kernel counts it in the resident set (VmRSS) although it is page cache,
// not memory the process holds (25 MB of a million-event home's 330 MB
// of segments after a start). ReleaseMapped hands those pages back, as
// projections.ReleaseMapped does for projections.db: the next read of
// one faults it in again from the page cache.

var errClosed = errors.New("search index: closed")

// ReleaseMapped drops the pages of the index's segment files from this
// process's resident set. The files and the page cache are untouched. It
// holds a snapshot of the index meanwhile, so no segment it names is
// closed (unmapped) under it, and Close waits for it. A no-op where the platform has no madvise.
func (x *Index) ReleaseMapped() error {
	// Not while Close unmaps the segments: a range read from
	// /proc/self/maps must stay the segment's until it is released.
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return errClosed
	}
	ix, err := x.idx.Advanced()
	if err != nil {
		return fmt.Errorf("search index: release mapped pages: %w", err)
	}
	r, err := ix.Reader()
	if err != nil {
		return fmt.Errorf("search index: release mapped pages: %w", err)
	}
	defer r.Close()
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return nil // not scorch: nothing of ours is mapped
	}
	paths := map[string]bool{}
	for _, s := range snap.Segments() {
		if p, ok := s.Segment().(interface{ Path() string }); ok && p.Path() != "" {
			// As /proc/self/maps names it: absolute, links resolved.
			if abs, err := filepath.Abs(p.Path()); err == nil {
				if real, err := filepath.EvalSymlinks(abs); err == nil {
					paths[real] = true
				}
			}
		}
	}
	return releaseMapped(paths)
}

// ReleaseMappedEvery runs ReleaseMapped every interval until ctx ends or
// the index is closed.
func (x *Index) ReleaseMappedEvery(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := x.ReleaseMapped(); err != nil {
				return // closed: a later tick would see it again
			}
		}
	}
}
