package budget

import (
	"context"

	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/tmc/langchaingo/llms"
)

// Models wraps models so that every call made through them is reserved
// before it leaves and settled when it returns, with the Charge of its
// context.
func (l *Ledger) Models(models func(route string) (llms.Model, error)) func(route string) (llms.Model, error) {
	return func(route string) (llms.Model, error) {
		m, err := models(route)
		if err != nil {
			return nil, err
		}
		return &metered{l: l, route: route, m: m}, nil
	}
}

type metered struct {
	l     *Ledger
	route string
	m     llms.Model
}

// GenerateContent reserves, calls, settles.
func (m *metered) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	c, _ := ChargeOf(ctx)
	var o llms.CallOptions
	for _, f := range opts {
		f(&o)
	}
	var r *Reservation
	var err error
	if n, ok := llm.EstimateOf(o); ok {
		r, err = m.l.reserve(ctx, c, m.route, n)
	} else {
		r, err = m.l.Reserve(ctx, c, m.route, msgs, o.Tools...)
	}
	if err != nil {
		return nil, err
	}
	resp, callErr := m.m.GenerateContent(ctx, msgs, opts...)
	var cost *float64
	if resp != nil && len(resp.Choices) > 0 {
		if v, ok := resp.Choices[0].GenerationInfo["CostUSD"].(float64); ok {
			cost = &v
		}
	}
	if callErr == nil && resp != nil && len(resp.Choices) > 0 && len(resp.Choices[0].ToolCalls) > 0 {
		// The turn goes on to run the tools and call again: the next
		// reservation stores this settlement (one fsync per decision).
		m.l.SettleLater(r, cost, callErr)
	} else if err := m.l.Settle(context.WithoutCancel(ctx), r, cost, callErr); err != nil {
		m.l.cfg.Logger.Error("budget: settle failed; the reservation stands at its worst case", "reservation", r.ReservationID, "err", err)
	}
	return resp, callErr
}

// Call implements llms.Model's one-prompt call through GenerateContent.
func (m *metered) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}
