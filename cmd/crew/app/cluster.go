package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
	"github.com/nats-io/nuid"
	"go.etcd.io/bbolt"
)

// Several crew processes — one per home, each with its own projections
// and consumers — may share one NATS cluster (R-ES-8, docs/adr/0006).
// Each holds three kinds of lease in the cluster's lease bucket:
//
//   - proc.<id>: "this process is alive", for as long as it runs; its
//     budget reservations are settled by a peer only once it is gone.
//   - conv.<conversation>: this process runs the conversation's passes.
//     Every process sees every trigger; the one that takes the lease runs
//     it. A lease that expires (its holder died) is taken over by the
//     others, who resume the run as after a crash.
//   - leader: this process runs the singletons (scheduler with the
//     approval sweep, day end and budget sweep; the team runtime's
//     passes; the Telegram poller). A
//     standby tries to take it every second.

// clusterLeaseTTL is how long a dead crew process keeps its leases: the
// time, give or take a second, before another takes its work over.
const clusterLeaseTTL = 5 * time.Second

// processKey is the lease key of a crew process's life.
func processKey(id string) string { return "proc." + id }

// member is this crew process on a shared cluster.
type member struct {
	id     string // <node>-<random>, new at each start
	desc   string // what a refused peer is told
	leases *events.Leases
	self   *events.Lease
	logger *slog.Logger
}

// joinCluster takes this process's life lease; what names the command
// ("serve").
func joinCluster(ctx context.Context, st *store, dir, what string, logger *slog.Logger) (*member, error) {
	host, _ := os.Hostname()
	m := &member{id: st.log.Node() + "-" + strings.ToLower(nuid.Next()[12:]), leases: st.leases, logger: logger}
	m.desc = fmt.Sprintf("crew %s pid %d on %s (home %s, process %s)", what, os.Getpid(), host, dir, m.id)
	var err error
	if m.self, err = st.leases.Acquire(ctx, processKey(m.id), m.desc, clusterLeaseTTL); err != nil {
		return nil, fmt.Errorf("join the cluster: %w", err)
	}
	return m, nil
}

// joinFor joins the cluster for a command that runs turns or model calls
// on st outside crew serve (consolidation, a fork), so a peer neither
// settles its reservations nor runs its conversations meanwhile; nil
// without a cluster. leave gives the lease back.
func joinFor(ctx context.Context, st *store, dir, what string) (m *member, leave func(), err error) {
	if st.leases == nil {
		return nil, func() {}, nil
	}
	if m, err = joinCluster(ctx, st, dir, what, slog.New(slog.DiscardHandler)); err != nil {
		return nil, nil, err
	}
	return m, m.Close, nil
}

// holder is m's budget holder, "" for none.
func (m *member) holder() string {
	if m == nil {
		return ""
	}
	return m.id
}

// claimer is m's loop.Claimer, nil for none.
func (m *member) claimer() loop.Claimer {
	if m == nil {
		return nil
	}
	return m.claim
}

// lost is closed when this process could not renew its life lease for a
// whole TTL: its peers think it dead and settle its reservations, so it
// must stop.
func (m *member) lost() <-chan struct{} { return m.self.Lost() }

// Close gives the life lease back.
func (m *member) Close() {
	if err := m.self.Release(context.Background()); err != nil {
		m.logger.Warn("process lease not released; it expires by itself", "err", err)
	}
}

// claim takes a conversation's lease for the worker (loop.Claimer).
func (m *member) claim(ctx context.Context, conversation string) (loop.Claim, error) {
	l, err := m.leases.Acquire(ctx, "conv."+conversation, m.id, clusterLeaseTTL)
	if held := (*events.HeldError)(nil); errors.As(err, &held) {
		return nil, fmt.Errorf("%w: %s", loop.ErrClaimed, held.Holder)
	}
	if err != nil {
		return nil, err
	}
	return convLease{l}, nil
}

type convLease struct{ l *events.Lease }

func (c convLease) Lost() <-chan struct{} { return c.l.Lost() }
func (c convLease) Abandon()              { c.l.Abandon() }
func (c convLease) Release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.l.Release(ctx) // not released: it expires, and a peer takes the (finished) conversation over harmlessly
}

// takeOver hands the worker every conversation whose lease expires (its
// holder died) until ctx ends.
func (m *member) takeOver(ctx context.Context, w *loop.Worker) {
	m.leases.Expired(ctx, "conv.*", func(key string) {
		id := strings.TrimPrefix(key, "conv.")
		m.logger.Info("taking over a conversation whose crew process stopped renewing its lease", "conversation", id)
		w.TakeOver(id)
	})
}

// lead runs the singletons while this process holds the leader lease:
// start starts them and returns what stops them. Until ctx ends, a
// standby tries to take the lease every second, and a leader that loses
// it stops them and becomes a standby.
func (m *member) lead(ctx context.Context, start func(ctx context.Context) (stop func(), err error)) {
	for ctx.Err() == nil {
		l, err := m.leases.Acquire(ctx, "leader", m.desc, clusterLeaseTTL)
		if err == nil {
			m.logger.Info("leading the cluster's crew processes: scheduler, approval sweep, day end, budget sweep, team runtime and Telegram run here")
			lctx, cancel := context.WithCancel(ctx)
			stop, serr := start(lctx)
			if serr != nil {
				m.logger.Error("the singletons did not start; giving the lead up", "err", serr)
			} else {
				select {
				case <-l.Lost():
					m.logger.Error("lost the leader lease (the cluster was unreachable for its whole TTL); a standby leads now")
				case <-ctx.Done():
				}
				stop()
			}
			cancel()
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			l.Release(rctx)
			rcancel()
		} else if held := (*events.HeldError)(nil); !errors.As(err, &held) && ctx.Err() == nil {
			m.logger.Warn("cannot ask for the leader lease", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// singletons are what runs on one crew process at a time: started on
// the leader (or at once without a cluster), stopped in reverse order.
type singletons struct {
	mu    sync.Mutex
	stops []func()
}

func (s *singletons) add(stop func()) {
	s.mu.Lock()
	s.stops = append(s.stops, stop)
	s.mu.Unlock()
}

func (s *singletons) stop() {
	s.mu.Lock()
	stops := s.stops
	s.stops = nil
	s.mu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
}

// adoptEvery is how often a process looks for conversations with work
// that nobody holds: the expiry watch may miss a marker (a watch reset
// under load), and a trigger may be lost with the process it reached.
const adoptEvery = 10 * time.Second

// adopt takes over, now and then, the conversations the projections show
// running or with messages waiting that no process holds a lease on.
// One waiting on the owner (an approval, a question) is left alone.
func (m *member) adopt(ctx context.Context, db *bbolt.DB, w *loop.Worker) {
	t := time.NewTicker(adoptEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ids, err := projections.Recoverable(db)
		if err != nil {
			continue
		}
		for _, id := range ids {
			c, err := projections.GetConversation(db, id)
			if err != nil || len(c.PendingApprovals) > 0 || c.PendingQuestion != nil ||
				c.Status != projections.ConversationRunning && c.Queued == 0 {
				continue
			}
			if _, held, err := m.leases.Holder(ctx, "conv."+id); err != nil || held {
				continue
			}
			m.logger.Info("taking over a conversation with work that no crew process holds", "conversation", id)
			w.TakeOver(id)
		}
	}
}
