package budget

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/llm"
)

// EmbedFunc is one embedding request: a vector per text, and the input
// tokens the provider counted (0 when it reported none).
type EmbedFunc func(ctx context.Context, texts []string) ([][]float32, int, error)

// Embed reserves an embedding request on route (purpose embed, paid by c),
// makes it with call, and settles it: reserved at the route's input
// price for the texts' estimated tokens (an embedding writes nothing),
// or budget.unknown_call_usd when the price is unknown; settled at the
// price of the tokens the provider counted (the estimate when it counted
// none), the worst case standing when the price is unknown. A request
// that would take a budget past its cap is refused with a *Refusal and
// call is not made. Cost is what it settled at (nil: unknown).
func (l *Ledger) Embed(ctx context.Context, c llm.Payer, route string, texts []string, call EmbedFunc) (vecs [][]float32, tokens int, cost *float64, err error) {
	estimate := 0
	for _, t := range texts {
		estimate += llm.TokensOfBytes(len(t))
	}
	caps := l.capsNow()
	price := l.cfg.Catalog.Lookup(route).Price
	usd, ceiling := caps.UnknownCallUSD, true
	if price != nil {
		usd, ceiling = price.Cost(estimate, 0), false
	}
	r, err := l.reserveUSD(ctx, c, events.PurposeEmbed, route, usd, ceiling, caps)
	if err != nil {
		return nil, 0, nil, err
	}
	vecs, tokens, err = call(ctx, texts)
	if err == nil && price != nil {
		v := price.Cost(cmp.Or(tokens, estimate), 0)
		cost = &v
	}
	l.settleOrLater(context.WithoutCancel(ctx), r, cost, err)
	return vecs, tokens, cost, err
}

// Embedder is an embedding route as recall calls it (search.Embedder).
type Embedder interface {
	Route() string
	Embed(ctx context.Context, texts []string) ([][]float32, int, error)
}

// Embedder is e with every request reserved before it leaves and settled
// when it returns (Embed, purpose embed, paid by no conversation); a
// refused request is not made (the documents wait, and queries rank by
// BM25 alone meanwhile).
func (l *Ledger) Embedder(e Embedder) Embedder { return budgeted{e, l} }

type budgeted struct {
	Embedder
	ledger *Ledger
}

func (b budgeted) Embed(ctx context.Context, texts []string) ([][]float32, int, error) {
	vecs, tokens, _, err := b.ledger.Embed(ctx, llm.Payer{}, b.Route(), texts, b.Embedder.Embed)
	return vecs, tokens, err
}

// EmbedScope is where embedding calls are recorded: model_called of
// purpose embed, in the usage ledger with every other call.
var EmbedScope = events.Scope(events.Root + ".recall.embed")

// EmbedCalls records each embedding request recall made (its
// search.EmbedUsage) as model_called of purpose embed on EmbedScope,
// priced from catalog (a local ollama model costs nothing we count;
// unknown: no cost); a request the budget refused was never made and is
// not recorded. A record that cannot be stored is logged at warn.
func EmbedCalls(log *events.Log, catalog *llm.Catalog, logger *slog.Logger) func(ctx context.Context, route string, texts, tokens int, latency time.Duration, err error) {
	return func(ctx context.Context, route string, texts, tokens int, latency time.Duration, callErr error) {
		if errors.Is(callErr, ErrBudget) {
			return // refused before it left: no call was made
		}
		_, model, _ := strings.Cut(route, ":")
		mc := &events.ModelCalled{Purpose: events.PurposeEmbed, Route: route, Model: model, InputTokens: tokens, LatencyMS: latency.Milliseconds()}
		if callErr != nil {
			mc.Error = callErr.Error()
		} else if p := catalog.Price(route); p != nil {
			cost := p.Cost(tokens, 0)
			mc.CostUSD = &cost
		} else if strings.HasPrefix(route, "ollama:") {
			zero := 0.0
			mc.CostUSD = &zero
		}
		if _, err := log.Append(context.WithoutCancel(ctx), EmbedScope, events.Any, events.MustNew(mc)); err != nil {
			logger.Warn("recall: could not record an embedding call", "err", err)
		}
	}
}
