package app

import (
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
)

// Forker makes forks (R-X-2) on a's store: POST /api/runs/{id}/fork, the
// runs page, crew replay --from-step on a stopped home.
func (a *App) Forker() loop.Forker {
	return loop.Forker{Log: a.Log(), Runs: projections.FreshRuns{Log: a.Log(), DB: a.DB(), Fresh: a.Runner}, Convs: a.Convs,
		Spills: a.Deps.Services.Spills, Routes: a.providers, Kicker: a.Worker, Clock: a.Deps.Clock}
}
