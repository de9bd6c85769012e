package loop_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
)

// gateModel holds every call until the test lets one through, recording
// which conversation's message each call answers and how many were held
// at once.
type gateModel struct {
	mu      sync.Mutex
	order   []string // the last human message of each call, in arrival order
	held    int
	maxHeld int
	release chan struct{}
}

func (m *gateModel) Call(ctx context.Context, req llm.Request) (llm.Reply, error) {
	text := ""
	for _, msg := range req.Messages {
		if msg.Role == llm.RoleUser {
			for _, p := range msg.Parts {
				if p.Text != "" {
					text = p.Text
				}
			}
		}
	}
	m.mu.Lock()
	m.order = append(m.order, text)
	m.held++
	m.maxHeld = max(m.maxHeld, m.held)
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.held--
		m.mu.Unlock()
	}()
	select {
	case <-m.release:
	case <-ctx.Done():
		return llm.Reply{}, ctx.Err()
	}
	return llm.Reply{Text: "answered " + text, Usage: llm.Usage{Input: 10, Output: 5}}, nil
}

func (m *gateModel) snapshot() (order []string, held, maxHeld int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.order...), m.held, m.maxHeld
}

// turns_in_flight bounds the turns running at once; the conversations
// kicked beyond it wait in a queue and run in the order they came, none
// failed or retried for want of a slot.
func TestTurnsInFlightBoundRunsTheRestInOrder(t *testing.T) {
	const limit, n = 2, 6
	h := newHarness(t, nil)
	m := &gateModel{release: make(chan struct{})}
	h.deps.Models = llm.ModelsFunc(func(string) (llm.Model, error) { return m, nil })
	h.agent.Routes = []string{"fake:gate"}
	h.convs = loop.NewConvs(h.log, nil)
	w, err := loop.StartWorker(t.Context(), loop.WorkerConfig{
		Log: h.log, Convs: h.convs, Deps: h.deps, SweepEvery: -1, TurnsInFlight: limit,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	var want []string
	for i := range n {
		id := fmt.Sprintf("q%d", i)
		want = append(want, "message of "+id)
		conv, err := h.convs.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conv.Append(t.Context(), func(*loop.State) ([]events.Event, error) {
			return []events.Event{&events.ConversationOpened{Agent: "master", Channel: "web"},
				&events.MessageReceived{Channel: "web", Text: "message of " + id}}, nil
		}); err != nil {
			t.Fatal(err)
		}
		w.Kick(id) // in this order (the consumer's kicks come after: no effect)
	}
	for released := 0; released < n; released++ {
		// Wait until as many calls are held as the bound lets run, the
		// newest one the pass the last answer made room for (one answer
		// at a time, so each freed slot starts exactly one pass).
		eventstest.Eventually(t, "the turns in flight to reach the model", func() bool {
			order, held, _ := m.snapshot()
			return held == min(limit, n-released) && len(order) == min(n, limit+released)
		})
		s := w.Stats()
		if s.InFlight > limit || s.Limit != limit {
			t.Fatalf("after %d answers: stats %+v, over the limit of %d", released, s, limit)
		}
		// Before any answer the rest wait in the queue (later, the
		// consumer's kicks may queue a finished conversation again: its
		// pass finds nothing to do).
		if released == 0 && (s.InFlight != limit || s.Queued != n-limit) {
			t.Fatalf("stats %+v, want %d in flight and %d queued", s, limit, n-limit)
		}
		m.release <- struct{}{}
	}
	eventstest.Eventually(t, "every turn to finish", w.Idle)
	order, _, maxHeld := m.snapshot()
	if maxHeld > limit {
		t.Errorf("%d turns called the model at once, the bound is %d", maxHeld, limit)
	}
	// The first limit turns start at once, so they reach the model in
	// either order; each later one starts when a slot frees, in the order
	// they came.
	if len(order) >= limit {
		slices.Sort(order[:limit])
	}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("turns ran in the order %q, want the order they came %q (the first %d in any order)", order, want, limit)
	}
	if s := w.Stats(); s.FailedPasses != 0 || s.Retrying != 0 {
		t.Errorf("stats %+v: a turn waiting for a slot failed or was retried", s)
	}
	for i := range n {
		st, err := loop.LoadState(t.Context(), h.log, nil, fmt.Sprintf("q%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Messages) != 2 || st.Messages[1].Text != "answered message of "+fmt.Sprintf("q%d", i) {
			t.Errorf("q%d: messages %+v, want its one answer", i, st.Messages)
		}
	}
}

// A turn waiting for its delegated child gives its slot to the child: with
// one turn in flight a delegation finishes instead of waiting forever.
func TestDelegationFinishesWithOneTurnInFlight(t *testing.T) {
	c := newCrew(t, map[string][]reply{
		"master": {delegateTo("coach", "plan a run"), say("The coach planned it.")},
		"coach":  {say("5 km easy.")},
	})
	c.inFlight = 1
	c.start()
	c.send("plan my run")
	st := c.answered()
	if last := st.Messages[len(st.Messages)-1]; last.Text != "The coach planned it." {
		t.Fatalf("last message %+v", last)
	}
	res := delegateResults(c.events("c1"))
	if len(res) != 1 || res[0].Output != "5 km easy." {
		t.Fatalf("delegate results %+v", res)
	}
}
