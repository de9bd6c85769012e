package budget_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/loop/llm"
)

// countingModel answers every call with cost (nil: unknown) and counts
// the calls that reached it.
type countingModel struct {
	calls atomic.Int32
	cost  *float64
}

func (m *countingModel) Call(ctx context.Context, req llm.Request) (llm.Reply, error) {
	m.calls.Add(1)
	return llm.Reply{Text: "ok", Usage: llm.Usage{Input: 10, Output: 5}, CostUSD: m.cost}, nil
}

func usd(v float64) *float64 { return &v }
func ptr[T any](v T) *T      { return &v }

var ids atomic.Int64

func newID() string { return fmt.Sprint("b", ids.Add(1)) }

// priced is a route whose price makes the worst case of a short prompt
// exactly one cent: no input price, 1,000 output tokens at $10/Mtok.
const priced = "openrouter:test/priced"

func catalog() *llm.Catalog {
	return llm.NewCatalog(map[string]llm.ModelOverride{
		priced: {InputUSDPerMTok: ptr(0.0), OutputUSDPerMTok: ptr(10.0), MaxOutputTokens: ptr(1000)},
	})
}

func open(t *testing.T, log *events.Log, caps budget.Caps) *budget.Ledger {
	t.Helper()
	l, err := budget.Open(t.Context(), budget.Config{Log: log, Location: time.UTC, NewID: newID, Catalog: catalog(),
		Clock: func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) },
		Caps:  func() budget.Caps { return caps }})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var hello = []llm.Message{llm.Text(llm.RoleUser, "hi")}

// pay is a request saying hello, paid by p.
func pay(p llm.Payer) llm.Request { return llm.Request{Messages: hello, Payer: p} }

// R-X-5: two conversations of one agent race to the last cent of its
// daily cap: exactly one call goes out, the other is refused before it
// leaves, in words that name the budget.
func TestBudgetRaceForLastCentsSendsExactlyOneCall(t *testing.T) {
	_, log := eventstest.Start(t)
	l := open(t, log, budget.Caps{AgentDailyUSD: map[string]float64{"coach": 0.03}})
	m := &countingModel{cost: usd(0.01)}
	models := l.Models(llm.ModelsFunc(func(string) (llm.Model, error) { return m, nil }))
	// Two calls settled at a cent each leave one cent: one call's worst
	// case.
	for i := range 2 {
		req := pay(llm.Payer{Agent: "coach", Conversation: fmt.Sprint("warm", i)})
		mdl, _ := models.Model(priced)
		if _, err := mdl.Call(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	m.cost = usd(0.004)
	before := m.calls.Load()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			req := pay(llm.Payer{Agent: "coach", Conversation: fmt.Sprint("race", i)})
			mdl, _ := models.Model(priced)
			_, errs[i] = mdl.Call(t.Context(), req)
		})
	}
	wg.Wait()
	if got := m.calls.Load() - before; got != 1 {
		t.Fatalf("%d calls went out, want exactly 1 (errors %v)", got, errs)
	}
	var refused *budget.Refusal
	for _, err := range errs {
		if errors.As(err, &refused) {
			break
		}
	}
	if refused == nil || !errors.Is(refused, llm.ErrBudget) || refused.Budget != "agent_day" || !strings.HasPrefix(refused.Sentence, "coach's daily cap of $0.03 is reached") {
		t.Fatalf("refusal = %+v, errors %v", refused, errs)
	}
	// The winner settled to its real cost: 0.01 + 0.01 + 0.004.
	if got := l.Today().Agents["coach"]; math.Abs(got-0.024) > 1e-12 || l.OpenReservations() != 0 {
		t.Errorf("coach today = $%v with %d open, want $0.024 and none", got, l.OpenReservations())
	}
}

// R-X-5, R-LOOP-5: a delegated child's call counts against its parent's
// cap; the crew's daily budget holds across agents.
func TestBudgetChildCountsAgainstParentAndGlobalDay(t *testing.T) {
	_, log := eventstest.Start(t)
	l := open(t, log, budget.Caps{DailyUSD: 0.05})
	m := &countingModel{cost: usd(0.01)}
	mdl, _ := l.Models(llm.ModelsFunc(func(string) (llm.Model, error) { return m, nil })).Model(priced)
	call := func(c llm.Payer) error {
		_, err := mdl.Call(t.Context(), pay(c))
		return err
	}
	// The parent, capped at 2.5 cents, spends one.
	if err := call(llm.Payer{Agent: "master", Conversation: "web-1", CapUSD: 0.025}); err != nil {
		t.Fatal(err)
	}
	// Its child (no cap of its own) spends one: the parent holds two.
	child := llm.Payer{Agent: "coach", Conversation: "web-1-d-c1", Ancestors: []string{"web-1"}}
	if err := call(child); err != nil {
		t.Fatal(err)
	}
	var r *budget.Refusal
	if err := call(child); !errors.As(err, &r) || r.Budget != "parent" || !strings.Contains(r.Sentence, "web-1's cost cap of $0.03") && !strings.Contains(r.Sentence, "web-1's cost cap of $0.0250") {
		t.Fatalf("child's third cent: %v, want refused on the parent's cap", err)
	}
	// Another root conversation is not capped by web-1, but by the day.
	for range 3 {
		if err := call(llm.Payer{Agent: "pong", Conversation: "web-2"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := call(llm.Payer{Agent: "pong", Conversation: "web-2"}); !errors.As(err, &r) || r.Budget != "global_day" || !strings.Contains(r.Sentence, "crew's daily budget of $0.05") {
		t.Fatalf("past the day's budget: %v", err)
	}
	if n := m.calls.Load(); n != 5 {
		t.Errorf("%d calls went out, want 5", n)
	}
}

// R-X-5: a call of unknown price reserves budget.unknown_call_usd; when
// it answers without a cost the reservation stands at that ceiling.
func TestBudgetUnknownPriceReservesCeiling(t *testing.T) {
	_, log := eventstest.Start(t)
	l := open(t, log, budget.Caps{UnknownCallUSD: 0.07, AgentDailyUSD: map[string]float64{"coach": 0.1}})
	m := &countingModel{}
	mdl, _ := l.Models(llm.ModelsFunc(func(string) (llm.Model, error) { return m, nil })).Model("openrouter:acme/mystery")
	req := pay(llm.Payer{Agent: "coach", Conversation: "c1"})
	req.Purpose = events.PurposeSummary
	if _, err := mdl.Call(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	envs, err := log.ReadAll(t.Context(), events.BudgetScope.Filter(), 0)
	if err != nil || len(envs) != 2 {
		t.Fatalf("%d budget events, %v", len(envs), err)
	}
	e0, _ := envs[0].Decode()
	e1, _ := envs[1].Decode()
	res, set := e0.(*events.BudgetReserved), e1.(*events.BudgetSettled)
	if !res.Ceiling || res.USD != 0.07 || res.Purpose != events.PurposeSummary || !set.Unknown || set.USD != 0.07 {
		t.Errorf("reserved %+v, settled %+v", res, set)
	}
	var r *budget.Refusal
	if _, err := mdl.Call(t.Context(), req); !errors.As(err, &r) || !strings.Contains(r.Sentence, "a call of unknown price reserves $0.07") {
		t.Errorf("second unknown call past the cap: %v", err)
	}
}

// R-X-5: a restart neither forgets a reservation a crash left open nor
// counts it twice: Open settles it (at the recorded call's cost when the
// conversation has one, else at its worst case), and a second Open finds
// nothing to settle.
func TestBudgetRestartSettlesOpenReservationsOnce(t *testing.T) {
	ctx := t.Context()
	_, log := eventstest.Start(t)
	// Two reservations stored, the process killed before settling: one
	// call was recorded in its conversation, the other never answered.
	for i, e := range []*events.BudgetReserved{
		{ReservationID: "x1", Day: "2026-12-01", Agent: "coach", Conversation: "c1", RunID: "r1", Step: 1, Purpose: "turn", Route: priced, USD: 0.01},
		{ReservationID: "x2", Day: "2026-12-01", Agent: "coach", Conversation: "c2", RunID: "r2", Step: 1, Purpose: "turn", Route: priced, USD: 0.01},
	} {
		if _, err := log.Append(ctx, events.BudgetScope, uint64(i), events.MustNew(e)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := log.Append(ctx, events.Conv("c1"), 0,
		events.MustNew(&events.ConversationOpened{Agent: "coach", Channel: "web"}),
		events.MustNew(&events.ModelCalled{RunID: "r1", Step: 1, Route: priced, Model: "test/priced", CostUSD: usd(0.003)})); err != nil {
		t.Fatal(err)
	}
	l := open(t, log, budget.Caps{})
	if got := l.Today().Agents["coach"]; math.Abs(got-0.013) > 1e-12 || l.OpenReservations() != 0 {
		t.Fatalf("after the restart: coach $%v, %d open; want $0.013 (0.003 recorded + 0.01 worst case) and none", got, l.OpenReservations())
	}
	again := open(t, log, budget.Caps{})
	if got := again.Today().GlobalUSD; math.Abs(got-0.013) > 1e-12 {
		t.Errorf("after a second restart: $%v, want $0.013 still", got)
	}
	envs, _ := log.ReadAll(ctx, events.BudgetScope.Filter(), 0)
	if len(envs) != 4 {
		t.Errorf("%d budget events, want 2 reservations and 2 settlements", len(envs))
	}
}

// A provider's answer is not trusted to give money back: a negative, NaN
// or infinite reported cost settles at the call's worst case, so a
// hostile or broken endpoint cannot lower (or poison) what a budget has
// spent and let further calls past a cap.
func TestBudgetReportedCostNeverLowersSpend(t *testing.T) {
	for _, bad := range []float64{-5, math.NaN(), math.Inf(-1), math.Inf(1)} {
		_, log := eventstest.Start(t)
		l := open(t, log, budget.Caps{AgentDailyUSD: map[string]float64{"coach": 0.02}})
		m := &countingModel{cost: usd(bad)}
		models := l.Models(llm.ModelsFunc(func(string) (llm.Model, error) { return m, nil }))
		mdl, _ := models.Model(priced)
		req := pay(llm.Payer{Agent: "coach", Conversation: "c1"})
		for range 4 {
			mdl.Call(t.Context(), req)
		}
		// Each call reserves a cent; settled at that cent, the cap of two
		// cents lets exactly two out.
		if n := m.calls.Load(); n != 2 {
			t.Errorf("reported cost %v: %d calls reached the model under a two-cent cap, want 2", bad, n)
		}
	}
}

// R-ES-8, R-X-5: crew processes sharing one cluster share one ledger. A
// process starting (or the leader's sweep) settles only the reservations
// of dead processes: a live peer's call in flight keeps its reservation
// until that peer settles it, and is never settled twice.
func TestBudgetSettlesOnlyDeadPeersReservations(t *testing.T) {
	ctx := t.Context()
	_, log := eventstest.Start(t)
	var mu sync.Mutex
	live := map[string]bool{"peer": true}
	alive := func(_ context.Context, holder string) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return live[holder], nil
	}
	for i, e := range []*events.BudgetReserved{
		{ReservationID: "live1", Day: "2026-12-01", Agent: "coach", Purpose: "turn", Route: priced, USD: 0.01, Holder: "peer"},
		{ReservationID: "dead1", Day: "2026-12-01", Agent: "coach", Purpose: "turn", Route: priced, USD: 0.01, Holder: "gone"},
	} {
		if _, err := log.Append(ctx, events.BudgetScope, uint64(i), events.MustNew(e)); err != nil {
			t.Fatal(err)
		}
	}
	l, err := budget.Open(ctx, budget.Config{Log: log, Location: time.UTC, NewID: newID, Catalog: catalog(),
		Clock: func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) },
		Caps:  func() budget.Caps { return budget.Caps{} }, Holder: "me", Alive: alive})
	if err != nil {
		t.Fatal(err)
	}
	if open := l.Today().OpenReservations; len(open) != 1 || open[0].ReservationID != "live1" {
		t.Fatalf("after start: open %+v; want only the live peer's live1", open)
	}
	// This process's own reservations carry its name, and a later sweep
	// leaves them alone while it lives.
	mine, err := l.Reserve(ctx, llm.Request{Messages: hello, Payer: llm.Payer{Agent: "coach"}, Route: priced})
	if err != nil || mine.Holder != "me" {
		t.Fatalf("reserve: %+v, %v; want holder me", mine, err)
	}
	// The peer dies: the sweep settles its reservation, once.
	mu.Lock()
	live["peer"] = false
	mu.Unlock()
	for range 2 {
		if err := l.SettleDead(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if open := l.Today().OpenReservations; len(open) != 1 || open[0].ReservationID != mine.ReservationID {
		t.Errorf("after the peer died: open %+v, want only this process's own", open)
	}
	envs, _ := log.ReadAll(ctx, events.BudgetScope.Filter(), 0)
	settled := map[string]int{}
	for _, env := range envs {
		if e, _ := env.Decode(); e != nil {
			if s, ok := e.(*events.BudgetSettled); ok {
				settled[s.ReservationID]++
			}
		}
	}
	if settled["live1"] != 1 || settled["dead1"] != 1 {
		t.Errorf("settlements %v; want live1 and dead1 once each", settled)
	}
}

// R-X-5: the tool declarations go out with every call, so the worst case
// reserved counts them as input.
func TestBudgetCountsToolDeclarations(t *testing.T) {
	_, log := eventstest.Start(t)
	cat := llm.NewCatalog(map[string]llm.ModelOverride{"openrouter:test/input": {InputUSDPerMTok: ptr(100.0), OutputUSDPerMTok: ptr(0.0), MaxOutputTokens: ptr(100)}})
	l, err := budget.Open(t.Context(), budget.Config{Log: log, Location: time.UTC, NewID: newID, Catalog: cat,
		Clock: func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	defs := []llm.Tool{{Name: "big", Description: strings.Repeat("a long description ", 3000)}}
	bare, err := l.Reserve(t.Context(), llm.Request{Messages: hello, Payer: llm.Payer{Agent: "a"}, Route: "openrouter:test/input"})
	if err != nil {
		t.Fatal(err)
	}
	declared, err := l.Reserve(t.Context(), llm.Request{Messages: hello, Tools: defs, Payer: llm.Payer{Agent: "a"}, Route: "openrouter:test/input"})
	if err != nil {
		t.Fatal(err)
	}
	want := llm.EstimateTokens(hello, defs)
	if got := declared.USD; got <= bare.USD || got != float64(want)*100/1e6 {
		t.Errorf("reserved $%v with %d-token declarations, $%v without; want $%v", got, want, bare.USD, float64(want)*100/1e6)
	}
}

// toolsModel answers every call with a tool call costing a cent, as a
// reply of a turn that goes on.
type toolsModel struct{}

func (toolsModel) Call(context.Context, llm.Request) (llm.Reply, error) {
	return llm.Reply{CostUSD: usd(0.01), Finish: llm.FinishToolCalls, ToolCalls: []llm.ToolCall{{ID: "c", Name: "look", Arguments: "{}"}}}, nil
}

// Issue 30 item 3: a reply that asks for tools is settled at once in what
// the ledger decides on, and its settlement is stored with the next
// call's reservation — one message for both (one fsync per decision);
// what no next call carries is stored by Flush (or within two seconds).
// A restart folds the same amounts; a crash before the settlement was
// stored settles it from the recorded model_called, once.
func TestBudgetSettlementRidesOnTheNextReservation(t *testing.T) {
	ctx := t.Context()
	_, log := eventstest.Start(t)
	l := open(t, log, budget.Caps{})
	models := l.Models(llm.ModelsFunc(func(string) (llm.Model, error) { return toolsModel{}, nil }))
	mdl, _ := models.Model(priced)
	step1 := pay(llm.Payer{Agent: "coach", Conversation: "c1", RunID: "r1", Step: 1})
	if _, err := mdl.Call(ctx, step1); err != nil {
		t.Fatal(err)
	}
	stored := func() []events.Event {
		envs, _ := log.ReadAll(ctx, events.BudgetScope.Filter(), 0)
		var out []events.Event
		for _, env := range envs {
			e, _ := env.Decode()
			out = append(out, e)
		}
		return out
	}
	if got := l.Today().GlobalUSD; math.Abs(got-0.01) > 1e-12 || l.OpenReservations() != 0 || len(stored()) != 1 {
		t.Fatalf("after the first call: $%v, %d open, %d stored; want $0.01 settled here, 1 reservation stored", got, l.OpenReservations(), len(stored()))
	}
	if _, err := mdl.Call(ctx, pay(llm.Payer{Agent: "coach", Conversation: "c1", RunID: "r1", Step: 2})); err != nil {
		t.Fatal(err)
	}
	evs := stored()
	if len(evs) != 2 {
		t.Fatalf("%d budget events after two calls, want 2 reservations", len(evs))
	}
	first, second := evs[0].(*events.BudgetReserved), evs[1].(*events.BudgetReserved)
	if len(second.Settles) != 1 || second.Settles[0].ReservationID != first.ReservationID || second.Settles[0].USD != 0.01 {
		t.Fatalf("the second reservation carries %+v", second.Settles)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if evs := stored(); len(evs) != 3 || evs[2].(*events.BudgetSettled).ReservationID != second.ReservationID {
		t.Fatalf("after Flush: %d events, want the second call's settlement last", len(evs))
	}
	again := open(t, log, budget.Caps{})
	if got := again.Today().GlobalUSD; math.Abs(got-0.02) > 1e-12 || again.OpenReservations() != 0 {
		t.Errorf("after a restart: $%v, %d open; want $0.02 and none", got, again.OpenReservations())
	}

	// A crash with a settlement pending: the restart settles it at the
	// recorded call's cost, once.
	_, log2 := eventstest.Start(t)
	l2 := open(t, log2, budget.Caps{})
	mdl2, _ := l2.Models(llm.ModelsFunc(func(string) (llm.Model, error) { return toolsModel{}, nil })).Model(priced)
	mdl2.Call(ctx, step1)
	if _, err := log2.Append(ctx, events.Conv("c1"), 0,
		events.MustNew(&events.ConversationOpened{Agent: "coach", Channel: "web"}),
		events.MustNew(&events.ModelCalled{RunID: "r1", Step: 1, Route: priced, Model: "test/priced", CostUSD: usd(0.01)})); err != nil {
		t.Fatal(err)
	}
	// l2 is dropped unflushed (the process died).
	for range 2 {
		l3 := open(t, log2, budget.Caps{})
		if got := l3.Today().GlobalUSD; math.Abs(got-0.01) > 1e-12 || l3.OpenReservations() != 0 {
			t.Errorf("after the crash: $%v, %d open; want $0.01 and none", got, l3.OpenReservations())
		}
	}
	envs, _ := log2.ReadAll(ctx, events.BudgetScope.Filter(), 0)
	if len(envs) != 2 {
		t.Errorf("%d budget events after the crash and two restarts, want a reservation and one settlement", len(envs))
	}
}
