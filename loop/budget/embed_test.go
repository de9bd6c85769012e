package budget_test

import (
	"context"
	"errors"
	"math"
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
