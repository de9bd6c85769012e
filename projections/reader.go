package projections

import (
	"context"
	"time"

	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// FreshWait bounds how long a read waits for the projections to apply
// what the log held when it began; past it (or on a stopped projection)
// the read shows what there is.
const FreshWait = 2 * time.Second

// Reader reads the read models for someone who looks at them: each read
// first waits (at most FreshWait) for Fresh to apply the log's last
// event, so what was stored before the read is in it, though the live
// batch holds events up to 50 ms before it commits. A reader that must
// not wait says so with NoWait; one given no Log or no Fresh reads what
// the projections hold.
type Reader struct {
	DB    *bbolt.DB
	Log   *events.Log
	Fresh Freshness
	// NoWait reads what the projections hold now: for a reader on a
	// path that must not wait on the log, which re-checks what it
	// decides on.
	NoWait bool
}

// CaughtUp waits, at most FreshWait, for the projections to apply the
// log's last event on filter (events.Root+".>": all of it).
func (r Reader) CaughtUp(ctx context.Context, filter string) {
	if r.NoWait || r.Log == nil || r.Fresh == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, FreshWait)
	defer cancel()
	if seq, err := r.Log.Last(ctx, filter); err == nil && seq > 0 {
		_ = r.Fresh.WaitFor(ctx, seq)
	}
}

// Applied waits, at most FreshWait, for the projections to apply stream
// sequence seq (one the reader stored or was told of).
func (r Reader) Applied(ctx context.Context, seq uint64) {
	if r.NoWait || r.Fresh == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, FreshWait)
	defer cancel()
	_ = r.Fresh.WaitFor(ctx, seq)
}

// Conversations is ListConversations once caught up.
func (r Reader) Conversations(ctx context.Context, limit int) ([]Conversation, error) {
	r.CaughtUp(ctx, events.Root+".>")
	return ListConversations(r.DB, limit)
}

// Activity is RecentActivity once caught up.
func (r Reader) Activity(ctx context.Context, n int) ([]ActivityItem, error) {
	r.CaughtUp(ctx, events.Root+".>")
	return RecentActivity(r.DB, n)
}

// Overview is Overview once caught up.
func (r Reader) Overview(ctx context.Context) (running, queued, waiting []string, err error) {
	r.CaughtUp(ctx, events.Root+".>")
	return Overview(r.DB)
}

// MemoryWrites is ListMemoryWrites once caught up.
func (r Reader) MemoryWrites(ctx context.Context, agent string, untrustedOnly bool, limit int) ([]MemoryWrite, error) {
	r.CaughtUp(ctx, events.Root+".>")
	return ListMemoryWrites(r.DB, agent, untrustedOnly, limit)
}
