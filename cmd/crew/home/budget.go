package home

import (
	"context"
	"log/slog"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/nats-io/nuid"
)

// Caps are the budgets config.yaml and the agents' agent.yaml set (R-X-5).
func (h *Home) Caps() budget.Caps {
	c := budget.Caps{DailyUSD: h.Config.Budget.DailyUSD, UnknownCallUSD: h.Config.Budget.UnknownCallUSD, AgentDailyUSD: map[string]float64{}}
	for id, a := range h.Agents {
		if a.DailyCapUSD > 0 {
			c.AgentDailyUSD[id] = a.DailyCapUSD
		}
	}
	return c
}

// OpenLedger opens the budget ledger over log; current is the home in
// force (a reload changes the caps). On a cluster shared by several crew
// processes, holder names this one and alive tells whether another still
// runs (budget.Config); "" and nil otherwise.
func OpenLedger(ctx context.Context, log *events.Log, current func() *Home, logger *slog.Logger, holder string, alive func(context.Context, string) (bool, error)) (*budget.Ledger, error) {
	h := current()
	return budget.Open(ctx, budget.Config{Log: log, Location: h.Config.Location(), Clock: time.Now, NewID: nuid.Next, Logger: logger,
		Catalog: h.Config.Catalog(), Caps: func() budget.Caps { return current().Caps() }, Holder: holder, Alive: alive})
}
