package budget

import (
	"cmp"
	"context"

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
	if serr := l.Settle(context.WithoutCancel(ctx), r, cost, err); serr != nil {
		l.cfg.Logger.Error("budget: settle failed; the reservation stands at its worst case", "reservation", r.ReservationID, "err", serr)
	}
	return vecs, tokens, cost, err
}
