package budget_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/loop/llm"
)

// Embedding requests are budgeted like every model call, under purpose
// embed: reserved at the input price of the texts' estimate before they
// leave, settled at the tokens the provider counted; refused, the request
// is never made; of unknown price, the crew's unknown-call amount is
// reserved and stands.
func TestEmbeddingIsReservedAndSettledUnderPurposeEmbed(t *testing.T) {
	const route, unknown = "openrouter:test/embed", "openrouter:test/unpriced-embed"
	_, log := eventstest.Start(t)
	caps := budget.Caps{DailyUSD: 0.0003}
	l, err := budget.Open(t.Context(), budget.Config{Log: log, Location: time.UTC, NewID: newID,
		Catalog: llm.NewCatalog(map[string]llm.ModelOverride{route: {InputUSDPerMTok: ptr(1.0), OutputUSDPerMTok: ptr(100.0), MaxOutputTokens: ptr(4000)}}),
		Clock:   func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) },
		Caps:    func() budget.Caps { return caps }})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	embed := func(ctx context.Context, texts []string) ([][]float32, int, error) {
		calls++
		return [][]float32{{1}, {2}}, 150, nil
	}
	texts := []string{strings.Repeat("a", 300), strings.Repeat("b", 300)} // 2 × 100 estimated tokens
	vecs, tokens, cost, err := l.Embed(t.Context(), llm.Payer{}, route, texts, embed)
	if err != nil || len(vecs) != 2 || tokens != 150 || cost == nil || math.Abs(*cost-0.00015) > 1e-12 {
		t.Fatalf("embed: %v %d %v %v", vecs, tokens, cost, err)
	}
	envs, _ := log.ReadAll(t.Context(), events.BudgetScope.Filter(), 0)
	var reserved *events.BudgetReserved
	var settled *events.BudgetSettled
	for _, env := range envs {
		e, _ := env.Decode()
		switch e := e.(type) {
		case *events.BudgetReserved:
			reserved = e
		case *events.BudgetSettled:
			settled = e
		}
	}
	// No output price, no max output tokens: an embedding writes nothing.
	if reserved == nil || reserved.Purpose != events.PurposeEmbed || reserved.Route != route || math.Abs(reserved.USD-0.0002) > 1e-12 || reserved.Ceiling {
		t.Errorf("reserved %+v", reserved)
	}
	if settled == nil || settled.ReservationID != reserved.ReservationID || math.Abs(settled.USD-0.00015) > 1e-12 {
		t.Errorf("settled %+v", settled)
	}
	if got := l.Today().GlobalUSD; math.Abs(got-0.00015) > 1e-12 {
		t.Errorf("the day holds %v", got)
	}
	// Another would take the day past its $0.0003: refused, not made.
	_, _, _, err = l.Embed(t.Context(), llm.Payer{}, route, texts, embed)
	if !errors.Is(err, budget.ErrBudget) || !strings.Contains(err.Error(), "daily budget") || calls != 1 {
		t.Errorf("over the budget: %v, %d calls made", err, calls)
	}
	// A failed request cost nothing known.
	caps = budget.Caps{}
	_, _, _, err = l.Embed(t.Context(), llm.Payer{}, route, texts, func(context.Context, []string) ([][]float32, int, error) {
		return nil, 0, errors.New("503")
	})
	if err == nil || math.Abs(l.Today().GlobalUSD-0.00015) > 1e-12 {
		t.Errorf("failed request: %v, the day holds %v", err, l.Today().GlobalUSD)
	}
	// Unknown price: the unknown-call amount is reserved and stands.
	_, _, cost, err = l.Embed(t.Context(), llm.Payer{}, unknown, texts, embed)
	if err != nil || cost != nil || math.Abs(l.Today().GlobalUSD-(0.00015+budget.DefaultUnknownCallUSD)) > 1e-12 {
		t.Errorf("unknown price: %v %v, the day holds %v", cost, err, l.Today().GlobalUSD)
	}
}

// Every embedding call recall makes is a model_called of purpose embed in
// the usage ledger, the tenth as the first (the records share one
// subject, so none may be appended as if it were empty): priced from the
// catalog, free on a local ollama model, its error kept; a request the
// budget refused was never made and is not recorded.
func TestEveryEmbeddingCallIsRecordedInTheUsageLedger(t *testing.T) {
	const route = "openrouter:test/embed"
	_, log := eventstest.Start(t)
	catalog := llm.NewCatalog(map[string]llm.ModelOverride{route: {InputUSDPerMTok: ptr(1.0), OutputUSDPerMTok: ptr(0.0)}})
	record := budget.EmbedCalls(log, catalog, slog.New(slog.DiscardHandler))
	for range 3 {
		record(t.Context(), "ollama:nomic-embed-text", 4, 120, 5*time.Millisecond, nil)
	}
	record(t.Context(), route, 2, 1000, time.Millisecond, nil)
	record(t.Context(), route, 2, 0, time.Millisecond, errors.New("503"))
	record(t.Context(), route, 2, 0, 0, &budget.Refusal{})
	envs, err := log.ReadAll(t.Context(), budget.EmbedScope.Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, env := range envs {
		e, err := env.Decode()
		if err != nil {
			t.Fatal(err)
		}
		mc, ok := e.(*events.ModelCalled)
		if !ok || mc.Purpose != events.PurposeEmbed {
			t.Fatalf("recorded %T %+v, want model_called of purpose embed", e, e)
		}
		cost := "unknown"
		if mc.CostUSD != nil {
			cost = fmt.Sprintf("%.4f", *mc.CostUSD)
		}
		got = append(got, fmt.Sprintf("%s %s %d %s %q", mc.Route, mc.Model, mc.InputTokens, cost, mc.Error))
	}
	want := []string{
		`ollama:nomic-embed-text nomic-embed-text 120 0.0000 ""`,
		`ollama:nomic-embed-text nomic-embed-text 120 0.0000 ""`,
		`ollama:nomic-embed-text nomic-embed-text 120 0.0000 ""`,
		`openrouter:test/embed test/embed 1000 0.0010 ""`,
		`openrouter:test/embed test/embed 0 unknown "503"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("recorded\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// fakeEmbedder counts its requests.
type fakeEmbedder struct{ calls int }

func (f *fakeEmbedder) Route() string { return "openrouter:test/embed" }
func (f *fakeEmbedder) Embed(context.Context, []string) ([][]float32, int, error) {
	f.calls++
	return [][]float32{{1}}, 100, nil
}

// The ledger's Embedder is the route reserved and settled by Embed: it
// keeps the route's name, and a request past the cap is refused unmade.
func TestLedgerEmbedderIsBudgeted(t *testing.T) {
	_, log := eventstest.Start(t)
	l, err := budget.Open(t.Context(), budget.Config{Log: log, Location: time.UTC, NewID: newID,
		Catalog: llm.NewCatalog(map[string]llm.ModelOverride{"openrouter:test/embed": {InputUSDPerMTok: ptr(1.0), OutputUSDPerMTok: ptr(0.0)}}),
		Clock:   func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) },
		Caps:    func() budget.Caps { return budget.Caps{DailyUSD: 0.00015} }})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEmbedder{}
	e := l.Embedder(f)
	if e.Route() != f.Route() {
		t.Errorf("Route = %q", e.Route())
	}
	text := []string{strings.Repeat("a", 300)}
	if vecs, tokens, err := e.Embed(t.Context(), text); err != nil || len(vecs) != 1 || tokens != 100 {
		t.Fatalf("first = %v %d %v", vecs, tokens, err)
	}
	if _, _, err := e.Embed(t.Context(), text); !errors.Is(err, budget.ErrBudget) || f.calls != 1 {
		t.Errorf("past the cap: %v after %d requests, want refused unmade", err, f.calls)
	}
}
