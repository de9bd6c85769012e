package projections

import (
	"context"
	"time"

	"go.etcd.io/bbolt"
)

// The projections database is memory-mapped by bbolt, and every page a
// transaction reads stays mapped in the process: a catch-up of a million
// events touches most of a 400 MB file, and 10,000 page views a large
// part of it, all of which the kernel counts in the process's resident
// set (VmRSS) although it is page cache, not memory the process holds.
// ReleaseMapped hands those pages back: the next read of one faults it in
// again from the page cache (a minor fault, no disk read while the kernel
// keeps the file cached).

// ReleaseMapped drops db's mapped pages from this process's resident set.
// The file's contents and the page cache are untouched; it is safe while
// other transactions run (it holds a read transaction, so bbolt cannot
// remap meanwhile). A no-op where the platform has no madvise.
func ReleaseMapped(db *bbolt.DB) error {
	return db.View(func(tx *bbolt.Tx) error {
		return releaseMapped(db.Info().Data, tx.Size())
	})
}

// ReleaseExecutable drops the pages of this process's own executable
// (its code and read-only data) from its resident set, as ReleaseMapped
// does projections.db's: they are page cache too, and the kernel maps in
// the pages around each one used, so the package inits and a catch-up
// left 40-45 MB of crew's 80 MB binary resident (docs/performance.md,
// "Memory"). The next use of a page faults it in again from the page
// cache. A no-op where the platform has no madvise.
func ReleaseExecutable() error { return releaseExecutable() }

// ReleaseMappedEvery runs ReleaseMapped and ReleaseExecutable every
// interval until ctx ends.
func ReleaseMappedEvery(ctx context.Context, db *bbolt.DB, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A failure leaves the binary's pages resident, nothing else:
			// the next tick tries again.
			_ = ReleaseExecutable()
			if err := ReleaseMapped(db); err != nil && ctx.Err() == nil {
				// A closed database ends the loop; nothing else can fail
				// here that a later tick would not see again.
				return
			}
		}
	}
}
