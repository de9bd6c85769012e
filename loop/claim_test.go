package loop_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
)

// leaseTable is an in-memory stand-in for the cluster's conversation
// leases: one holder per conversation.
type leaseTable struct {
	mu     sync.Mutex
	held   map[string]string
	claims map[string]int // holder → claims won
}

func newLeaseTable() *leaseTable {
	return &leaseTable{held: map[string]string{}, claims: map[string]int{}}
}

func (lt *leaseTable) claimer(who string) loop.Claimer {
	return func(_ context.Context, id string) (loop.Claim, error) {
		lt.mu.Lock()
		defer lt.mu.Unlock()
		if h, ok := lt.held[id]; ok {
			return nil, fmt.Errorf("%w: %s", loop.ErrClaimed, h)
		}
		lt.held[id] = who
		lt.claims[who]++
		return &tableClaim{lt: lt, id: id, lost: make(chan struct{})}, nil
	}
}

// expire drops a holder's lease, as its TTL running out would.
func (lt *leaseTable) expire(id string) {
	lt.mu.Lock()
	delete(lt.held, id)
	lt.mu.Unlock()
}

type tableClaim struct {
	lt   *leaseTable
	id   string
	lost chan struct{}
}

func (c *tableClaim) Lost() <-chan struct{} { return c.lost }
func (c *tableClaim) Release()              { c.lt.expire(c.id) }
func (c *tableClaim) Abandon()              { c.lt.expire(c.id) }

// startClaimingWorker starts a worker of its own process (its own
// writers) that runs a conversation only under a lease of table.
func (h *harness) startClaimingWorker(lt *leaseTable, who string) *loop.Worker {
	h.t.Helper()
	w, err := loop.StartWorker(h.t.Context(), loop.WorkerConfig{
		Log: h.log, Convs: loop.NewConvs(h.log, nil), Deps: h.deps, SweepEvery: -1,
		Claim: lt.claimer(who),
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(w.Close)
	return w
}

// R-ES-8, R-X-8: two crew processes kicked for the same message run it
// once: the one that takes the conversation's lease; the other drops the
// trigger.
func TestClaimedConversationRunsOnOneProcess(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {say("once")}})
	lt := newLeaseTable()
	a, b := h.startClaimingWorker(lt, "a"), h.startClaimingWorker(lt, "b")
	h.send("hello")
	a.Kick(h.conv)
	b.Kick(h.conv)
	waitFor(t, "the message answered", func() bool {
		return len(eventsOf[*events.RunFinished](h.events())) == 1 && a.Idle() && b.Idle()
	})
	if n := h.models["fake:a"].calls(); n != 1 {
		t.Errorf("the model was called %d times, want once", n)
	}
	if got := len(eventsOf[*events.RunStarted](h.events())); got != 1 {
		t.Errorf("%d runs started, want 1", got)
	}
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if len(lt.held) != 0 {
		t.Errorf("leases still held after the passes: %v", lt.held)
	}
}

// R-ES-8, R-REL-2: a conversation held by a process that died is left
// alone while its lease lasts, and taken over once it expires: the run
// the dead process had open is resumed as after a crash (run_resumed) and
// answered.
func TestExpiredHolderConversationIsTakenOver(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {say("taken over")}})
	lt := newLeaseTable()
	h.send("hello")
	// The dead process had started the run and held the lease.
	h.append(&events.RunStarted{RunID: "r-dead", Agent: h.agent.ID, Trigger: "message"})
	lt.mu.Lock()
	lt.held[h.conv] = "dead"
	lt.mu.Unlock()
	w := h.startClaimingWorker(lt, "b")
	w.Kick(h.conv)
	waitFor(t, "the kick dropped", w.Idle)
	if n := h.models["fake:a"].calls(); n != 0 {
		t.Fatalf("the model was called %d times while another process held the conversation", n)
	}
	lt.expire(h.conv)
	w.TakeOver(h.conv)
	waitFor(t, "the run taken over and finished", func() bool {
		return len(eventsOf[*events.RunFinished](h.events())) == 1 && w.Idle()
	})
	evs := h.events()
	if len(eventsOf[*events.RunResumed](evs)) != 1 || lastFinish(t, evs).Status != events.RunDone || lastFinish(t, evs).RunID != "r-dead" {
		t.Errorf("after the takeover: resumed %d, finish %+v; want the dead process's run resumed once and done", len(eventsOf[*events.RunResumed](evs)), lastFinish(t, evs))
	}
}
