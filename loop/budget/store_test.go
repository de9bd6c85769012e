package budget_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/nats-io/nats.go"
)

// faultyStore is the real log with faults planted by event type: each
// append of a type in fail fails (fail[typ] times) as a stream without a
// leader answers, after storing it when stored (its answer lost); sync
// fails syncs times.
type faultyStore struct {
	*events.Log
	mu     sync.Mutex
	fail   map[string]int
	stored bool
	syncs  int
}

var errNoLeader = &events.StoreError{Kind: events.ErrStoreUnavailable, Err: nats.ErrNoResponders}

func (s *faultyStore) Append(ctx context.Context, scope events.Scope, expect uint64, envs ...events.Envelope) ([]events.Envelope, error) {
	s.mu.Lock()
	typ := envs[0].Type
	fail := s.fail[typ] > 0
	if fail {
		s.fail[typ]--
	}
	stored := s.stored
	s.mu.Unlock()
	if !fail {
		return s.Log.Append(ctx, scope, expect, envs...)
	}
	if stored {
		if _, err := s.Log.Append(ctx, scope, expect, envs...); err != nil {
			return nil, err
		}
	}
	return nil, errNoLeader
}

func (s *faultyStore) Sync(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.syncs > 0 {
		s.syncs--
		return errNoLeader
	}
	return s.Log.Sync(ctx)
}

func (s *faultyStore) faults() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.syncs
	for _, v := range s.fail {
		n += v
	}
	return n
}

func openOn(t *testing.T, store budget.Store, caps budget.Caps) *budget.Ledger {
	t.Helper()
	l, err := budget.Open(t.Context(), budget.Config{Log: store, Location: time.UTC, NewID: newID, Catalog: catalog(),
		Clock: func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) },
		Caps:  func() budget.Caps { return caps }})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// settledIn counts the settlements the log holds, those a reservation
// carries included.
func settledIn(t *testing.T, log *events.Log) int {
	t.Helper()
	envs, err := log.ReadAll(t.Context(), events.BudgetScope.Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, env := range envs {
		e, err := env.Decode()
		if err != nil {
			t.Fatal(err)
		}
		switch e := e.(type) {
		case *events.BudgetReserved:
			n += len(e.Settles)
		case *events.BudgetSettled:
			n++
		}
	}
	return n
}

// A reservation the store did not take (the append, or its fsync) is a
// *budget.StoreError: the harness failing, never a refusal, and the call
// does not leave. A refusal is never a StoreError.
func TestBudgetStoreFailureIsAStoreErrorNotARefusal(t *testing.T) {
	_, log := eventstest.Start(t)
	store := &faultyStore{Log: log, fail: map[string]int{events.TypeBudgetReserved: 1}, syncs: 1}
	l := openOn(t, store, budget.Caps{DailyUSD: 0.015})
	m := &countingModel{cost: usd(0.01)}
	mdl, _ := l.Models(llm.ModelsFunc(func(string) (llm.Model, error) { return m, nil })).Model(priced)
	for _, what := range []string{"append", "fsync"} {
		_, err := mdl.Call(t.Context(), pay(llm.Payer{Agent: "coach", Conversation: "c1"}))
		if se, ok := errors.AsType[*budget.StoreError](err); !ok || !errors.Is(se, events.ErrStoreUnavailable) || errors.Is(err, budget.ErrBudget) {
			t.Fatalf("%s failed: err = %v, want a StoreError, no refusal", what, err)
		}
	}
	if m.calls.Load() != 0 {
		t.Fatalf("%d calls left without a stored reservation", m.calls.Load())
	}
	// The fsync's reservation was stored: it is settled at zero, so it
	// takes nothing of the budget.
	if l.OpenReservations() != 0 || l.Today().GlobalUSD != 0 {
		t.Errorf("%d open, $%v spent after two failed reservations; want none", l.OpenReservations(), l.Today().GlobalUSD)
	}
	if _, err := mdl.Call(t.Context(), pay(llm.Payer{Agent: "coach", Conversation: "c1"})); err != nil {
		t.Fatal(err)
	}
	_, err := mdl.Call(t.Context(), pay(llm.Payer{Agent: "coach", Conversation: "c1"}))
	if _, ok := errors.AsType[*budget.StoreError](err); ok || !errors.Is(err, budget.ErrBudget) {
		t.Fatalf("over the day's budget: err = %v, want a refusal only", err)
	}
}

// A settlement the store does not take neither fails the call nor is
// lost: the ledger counts the real cost at once and stores it later,
// trying again while the store keeps failing.
func TestBudgetSettlementThatCannotBeStoredIsStoredLater(t *testing.T) {
	_, log := eventstest.Start(t)
	// The settlement's own append, then the first flush, fail.
	store := &faultyStore{Log: log, fail: map[string]int{events.TypeBudgetSettled: 2}}
	l := openOn(t, store, budget.Caps{})
	m := &countingModel{cost: usd(0.002)}
	mdl, _ := l.Models(llm.ModelsFunc(func(string) (llm.Model, error) { return m, nil })).Model(priced)
	if _, err := mdl.Call(t.Context(), pay(llm.Payer{Agent: "coach", Conversation: "c1"})); err != nil {
		t.Fatalf("the call failed on its settlement: %v", err)
	}
	if got := l.Today().GlobalUSD; l.OpenReservations() != 0 || math.Abs(got-0.002) > 1e-12 {
		t.Errorf("%d open, $%v spent; want none open and the real cost $0.002", l.OpenReservations(), got)
	}
	eventstest.Eventually(t, "the settlement stored by a second flush", func() bool { return store.faults() == 0 && settledIn(t, log) == 1 })
	// A ledger folded from the log agrees.
	if again := open(t, log, budget.Caps{}); again.OpenReservations() != 0 || math.Abs(again.Today().GlobalUSD-0.002) > 1e-12 {
		t.Errorf("reopened: %d open, $%v spent", again.OpenReservations(), again.Today().GlobalUSD)
	}
}

// A reservation the store took but whose answer was lost is settled at
// zero by the next reservation (its call never left): it does not hold
// its worst case until a restart.
func TestBudgetReservationStoredWithoutAnswerIsSettledAtZero(t *testing.T) {
	_, log := eventstest.Start(t)
	store := &faultyStore{Log: log, fail: map[string]int{events.TypeBudgetReserved: 1}, stored: true}
	l := openOn(t, store, budget.Caps{})
	m := &countingModel{cost: usd(0.002)}
	mdl, _ := l.Models(llm.ModelsFunc(func(string) (llm.Model, error) { return m, nil })).Model(priced)
	if _, err := mdl.Call(t.Context(), pay(llm.Payer{Agent: "coach", Conversation: "c1"})); err == nil {
		t.Fatal("the lost answer was not an error")
	}
	if _, err := mdl.Call(t.Context(), pay(llm.Payer{Agent: "coach", Conversation: "c1"})); err != nil {
		t.Fatal(err)
	}
	for name, led := range map[string]*budget.Ledger{"this ledger": l, "a reopened one": open(t, log, budget.Caps{})} {
		if got := led.Today().GlobalUSD; led.OpenReservations() != 0 || math.Abs(got-0.002) > 1e-12 {
			t.Errorf("%s: %d open, $%v spent; want none and the one call's $0.002", name, led.OpenReservations(), got)
		}
	}
}
