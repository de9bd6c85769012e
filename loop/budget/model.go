package budget

import (
	"context"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/llm"
)

// Models wraps models so that every call made through them is reserved
// before it leaves and settled when it returns, charged to the Request's
// Payer for its Purpose.
func (l *Ledger) Models(models llm.Models) llm.Models {
	return llm.ModelsFunc(func(route string) (llm.Model, error) {
		m, err := models.Model(route)
		if err != nil {
			return nil, err
		}
		return &metered{l: l, route: route, m: m}, nil
	})
}

type metered struct {
	l     *Ledger
	route string
	m     llm.Model
}

// Call reserves, calls, settles. A reservation the ledger could not store
// is a *StoreError (the call did not leave), a refused one a *Refusal.
func (m *metered) Call(ctx context.Context, req llm.Request) (llm.Reply, error) {
	req.Route = m.route
	r, err := m.l.Reserve(ctx, req)
	if err != nil {
		return llm.Reply{}, err
	}
	rep, callErr := m.m.Call(ctx, req)
	// A settlement is durable with the next durable append (the run's end,
	// ADR 0008): lost to a power cut before it, the reservation stands at
	// its worst case, never less.
	if callErr == nil && len(rep.ToolCalls) > 0 {
		// The turn goes on to run the tools and call again: the next
		// reservation stores this settlement (one fsync per decision).
		m.l.SettleLater(r, rep.CostUSD, callErr)
	} else {
		m.l.settleOrLater(events.Deferred(context.WithoutCancel(ctx)), r, rep.CostUSD, callErr)
	}
	return rep, callErr
}
