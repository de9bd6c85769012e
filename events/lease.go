package events

import (
	"context"
	"errors"
	"fmt"
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
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", key, err)
	}
	cfg := jetstream.KeyValueConfig{Bucket: LeaseBucket, Description: "crew leases", LimitMarkerTTL: time.Second, History: 1}
	if nc.ConnectedClusterName() != "" {
		cfg.Replicas = ClusterReplicas
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, cfg)
	if cfg.Replicas > 1 && cannotReplicate(err) {
		cfg.Replicas = 1
		kv, err = js.CreateOrUpdateKeyValue(ctx, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("lease %s: bucket: %w", key, err)
	}
	rev, err := kv.Create(ctx, key, []byte(owner), jetstream.KeyTTL(ttl))
	if errors.Is(err, jetstream.ErrKeyExists) {
		holder := "another process"
		if e, gerr := kv.Get(ctx, key); gerr == nil {
			holder = string(e.Value())
		}
		return nil, &HeldError{Key: key, Holder: holder}
	}
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", key, err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	l := &Lease{js: js, key: key, owner: []byte(owner), ttl: ttl, rev: rev, lost: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go l.renew(runCtx)
	return l, nil
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
