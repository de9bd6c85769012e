package events

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// LeaseBucket is the JetStream KV bucket of leases: keys held by one crew
// process at a time, each with its own TTL.
const LeaseBucket = "crew_leases"

// Lease is a key of LeaseBucket this process holds. It is renewed every
// third of its TTL by a publish that carries the TTL again and expects the
// key's last revision (kv.Update would drop the TTL and the lease would
// never expire). A holder that dies stops renewing and the key expires.
type Lease struct {
	js    jetstream.JetStream
	key   string
	owner []byte
	ttl   time.Duration

	mu     sync.Mutex
	rev    uint64
	lost   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// HeldError says a lease is held by another process.
type HeldError struct {
	Key, Holder string
}

func (e *HeldError) Error() string { return fmt.Sprintf("lease %s is held by %s", e.Key, e.Holder) }

// AcquireLease takes key for owner (a description of this process) with
// ttl (whole seconds, at least 1) and keeps renewing it until Release. If
// another process holds it, the error is a *HeldError naming the holder.
func AcquireLease(ctx context.Context, nc *nats.Conn, key, owner string, ttl time.Duration) (*Lease, error) {
	ls, err := OpenLeases(ctx, nc)
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", key, err)
	}
	return ls.Acquire(ctx, key, owner, ttl)
}

// Leases is the lease bucket, opened once for many leases (a crew process
// on a cluster takes one per conversation it runs).
type Leases struct {
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	raised *Raise
}

// OpenLeases creates or opens the lease bucket (3 replicas on a cluster
// that can place them; one found at fewer is raised, see Raised).
func OpenLeases(ctx context.Context, nc *nats.Conn) (*Leases, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	kv, raised, err := openKV(ctx, nc, js, jetstream.KeyValueConfig{Bucket: LeaseBucket, Description: "crew leases", LimitMarkerTTL: time.Second, History: 1})
	if err != nil {
		return nil, err
	}
	return &Leases{js: js, kv: kv, raised: raised}, nil
}

// Raised is the raise of the lease bucket's replicas OpenLeases made,
// nil for none (or no bucket).
func (ls *Leases) Raised() *Raise {
	if ls == nil {
		return nil
	}
	return ls.raised
}

// Acquire takes key for owner with ttl, as AcquireLease.
func (ls *Leases) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (*Lease, error) {
	rev, err := ls.kv.Create(ctx, key, []byte(owner), jetstream.KeyTTL(ttl))
	if errors.Is(err, jetstream.ErrKeyExists) {
		holder := "another process"
		if e, gerr := ls.kv.Get(ctx, key); gerr == nil {
			holder = string(e.Value())
		}
		return nil, &HeldError{Key: key, Holder: holder}
	}
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", key, err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	l := &Lease{js: ls.js, key: key, owner: []byte(owner), ttl: ttl, rev: rev, lost: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go l.renew(runCtx)
	return l, nil
}

// Holder is who holds key now; ok is false when nobody does.
func (ls *Leases) Holder(ctx context.Context, key string) (holder string, ok bool, err error) {
	e, err := ls.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("lease %s: %w", key, err)
	}
	return string(e.Value()), true, nil
}

// Expired calls f with each key matching pattern (a KV key pattern such
// as "conv.*") whose lease ran out from now on: its holder stopped
// renewing it (died, or lost the cluster for a whole TTL). A release is
// not an expiry. It returns when ctx ends.
//
// Two ways find an expiry: a watch of the bucket, which tells it at once
// — but the server's expiry marker lives a second, and a watch whose
// consumer died with the bucket's leader server can stay silent for good
// (events TestLeasesOfADeadHolderExpireWhenTheBucketLeaderDies) — and a
// sweep every expirySweep, which reads the bucket afresh and tells the
// keys held at the last sweep that are gone now without a release. A key
// is told once each time it runs out (it is told anew once seen taken
// again).
func (ls *Leases) Expired(ctx context.Context, pattern string, f func(key string)) {
	var mu sync.Mutex
	told := map[string]time.Time{} // key → when it was told
	tell := func(key string) {
		mu.Lock()
		recent := time.Since(told[key]) < 3*expirySweep
		if !recent {
			told[key] = time.Now()
		}
		for k, at := range told {
			if time.Since(at) >= 3*expirySweep {
				delete(told, k)
			}
		}
		mu.Unlock()
		if !recent {
			f(key)
		}
	}
	// The keys the watch saw taken or renewed since the last sweep: a
	// lease shorter than a sweep's gap is still looked for.
	var seenMu sync.Mutex
	seen := map[string]bool{}
	// A key taken again may run out again: told anew.
	untell := func(key string) { mu.Lock(); delete(told, key); mu.Unlock() }
	// The sweep's first read comes after the watch has begun: a key put
	// before that read is in it, one put after it the watch sees. Begun
	// at once, a key put between the read and the watch's start was in
	// neither, and an expiry of it before the next good read (the bucket
	// without a leader) was never told.
	watching := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		ls.watchExpiries(ctx, pattern, watching, tell, func(key string) { untell(key); seenMu.Lock(); seen[key] = true; seenMu.Unlock() })
	})
	wg.Go(func() {
		select {
		case <-watching:
		case <-ctx.Done():
			return
		}
		ls.sweepExpiries(ctx, pattern, tell, untell, func() map[string]bool {
			seenMu.Lock()
			defer seenMu.Unlock()
			s := seen
			seen = map[string]bool{}
			return s
		})
	})
	wg.Wait()
}

// expirySweep is how often Expired reads the bucket afresh.
const expirySweep = 2 * time.Second

// watchExpiries tells each expiry marker a watch of pattern delivers, and
// each key put to held; a broken watch is started again. watching is
// closed once the first watch was asked for (made or failed).
func (ls *Leases) watchExpiries(ctx context.Context, pattern string, watching chan<- struct{}, tell, held func(key string)) {
	for ctx.Err() == nil {
		w, err := ls.kv.Watch(ctx, pattern, jetstream.UpdatesOnly())
		if watching != nil {
			close(watching)
			watching = nil
		}
		if err == nil {
			for e := range w.Updates() {
				switch {
				case e == nil:
				case e.Operation() == jetstream.KeyValuePurge:
					tell(e.Key())
				case e.Operation() == jetstream.KeyValuePut:
					held(e.Key())
				}
			}
			w.Stop()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// sweepExpiries reads the keys of pattern every expirySweep and tells
// those held at the last read, or seen held by the watch before this one
// (seen hands them over), that are gone or purged now; a deleted one was
// released. A read that fails is skipped: the next one compares with the
// last good one.
func (ls *Leases) sweepExpiries(ctx context.Context, pattern string, tell, untell func(key string), seen func() map[string]bool) {
	held := map[string]bool{}
	t := time.NewTicker(expirySweep)
	defer t.Stop()
	for {
		maps.Copy(held, seen()) // taken before the read, so a key put after it is not taken for gone
		now, err := ls.snapshot(ctx, pattern)
		if err == nil {
			for k := range held {
				if op, ok := now[k]; !ok || op == jetstream.KeyValuePurge {
					tell(k)
				}
			}
			held = map[string]bool{}
			for k, op := range now {
				if op == jetstream.KeyValuePut {
					held[k] = true
					untell(k)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// snapshot is the last operation on each key of pattern (put, delete or
// purge), read by a watch of its own that stops once it has them all.
func (ls *Leases) snapshot(ctx context.Context, pattern string) (map[string]jetstream.KeyValueOp, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	w, err := ls.kv.Watch(ctx, pattern, jetstream.MetaOnly())
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	out := map[string]jetstream.KeyValueOp{}
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("lease watch closed")
			}
			if e == nil {
				return out, nil
			}
			out[e.Key()] = e.Operation()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// renew keeps the lease until ctx ends; if it cannot for a whole TTL, the
// lease may be someone else's now: Lost is closed and renewing stops.
func (l *Lease) renew(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.mu.Lock()
		rev := l.rev
		l.mu.Unlock()
		tryCtx, cancel := context.WithTimeout(ctx, l.ttl/3)
		ack, err := l.js.PublishMsg(tryCtx, &nats.Msg{Subject: "$KV." + LeaseBucket + "." + l.key, Data: l.owner},
			jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(l.ttl))
		cancel()
		if err == nil {
			l.mu.Lock()
			l.rev = ack.Sequence
			l.mu.Unlock()
			last = time.Now()
			continue
		}
		if ctx.Err() != nil {
			return
		}
		// A wrong revision means the key expired and was taken; anything
		// else is tried again until the TTL is spent.
		if isWrongLastSequence(err) || time.Since(last) >= l.ttl {
			close(l.lost)
			return
		}
	}
}

// Lost is closed when the lease could not be renewed: the holder must stop
// what the lease guards.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Release stops renewing and deletes the key, so another process can take
// it at once.
func (l *Lease) Release(ctx context.Context) error {
	l.cancel()
	<-l.done
	select {
	case <-l.lost:
		return nil // not ours any more
	default:
	}
	kv, err := l.js.KeyValue(ctx, LeaseBucket)
	if err != nil {
		return fmt.Errorf("release lease %s: %w", l.key, err)
	}
	l.mu.Lock()
	rev := l.rev
	l.mu.Unlock()
	if err := kv.Delete(ctx, l.key, jetstream.LastRevision(rev)); err != nil {
		return fmt.Errorf("release lease %s: %w", l.key, err)
	}
	return nil
}

// Abandon stops renewing without deleting the key: it expires within its
// TTL and the other processes are told so (Leases.Expired), as if this
// one had died. For work cut by a stop that another process should take
// over.
func (l *Lease) Abandon() {
	l.cancel()
	<-l.done
}

// Holders lists who holds the keys matching pattern (a KV key pattern
// such as "proc.*"), key → holder.
func (ls *Leases) Holders(ctx context.Context, pattern string) (map[string]string, error) {
	keys, err := ls.kv.ListKeysFiltered(ctx, pattern)
	if err != nil {
		return nil, fmt.Errorf("leases %s: %w", pattern, err)
	}
	defer keys.Stop()
	out := map[string]string{}
	for k := range keys.Keys() {
		if e, err := ls.kv.Get(ctx, k); err == nil {
			out[k] = string(e.Value())
		}
	}
	return out, nil
}

// Watch calls f with each key matching pattern and its holder: those held
// now before it first returns to the loop, then each new or renewed one,
// until ctx ends (a broken watch is started again). ready, when not nil,
// is called once those held at the start were delivered.
func (ls *Leases) Watch(ctx context.Context, pattern string, f func(key, holder string), ready func()) {
	for ctx.Err() == nil {
		w, err := ls.kv.Watch(ctx, pattern)
		if err == nil {
			for e := range w.Updates() {
				switch {
				case e == nil:
					if ready != nil {
						ready()
						ready = nil
					}
				case e.Operation() == jetstream.KeyValuePut:
					f(e.Key(), string(e.Value()))
				}
			}
			w.Stop()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
