package events

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// quietEvery is how often a server with CollectWhenQuiet looks for a
// quiet moment.
const quietEvery = 2 * time.Second

// quietCollections is how many collections in a row a quiet moment gets:
// the file store's buffer goes back to its pool when a collection frees
// the expired cache that held it, and the pool lets it go two
// collections later.
const quietCollections = 3

// quiet decides when the process is quiet: no collection of the
// runtime's own since the last look.
type quiet struct {
	seen   uint64 // the collections counted at the last look
	forced int    // collections of ours since the runtime's last
}

// collect reports whether to collect now, given the collections the
// runtime has counted; after collecting, the caller reports the count
// again with collected.
func (q *quiet) collect(cycles uint64) bool {
	if cycles != q.seen {
		q.seen, q.forced = cycles, 0 // the runtime collects: the process is busy
		return false
	}
	return q.forced < quietCollections
}

func (q *quiet) collected(cycles uint64) { q.seen, q.forced = cycles, q.forced+1 }

// collectWhenQuiet runs until stop is closed: at each quiet moment it
// collects and hands the freed pages back (debug.FreeOSMemory), at most
// quietCollections times until the runtime collects on its own again.
func collectWhenQuiet(stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	sample := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	cycles := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	q := quiet{seen: cycles()}
	t := time.NewTicker(quietEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if q.collect(cycles()) {
			debug.FreeOSMemory()
			q.collected(cycles())
		}
	}
}
