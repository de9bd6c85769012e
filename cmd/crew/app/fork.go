package app

import (
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
)

// Forker makes forks (R-X-2) on a's store: crew serve's POST
// /api/runs/{id}/fork and runs page, crew replay --from-step on a stopped
// home.
func (a *App) Forker() loop.Forker {
	return loop.Forker{Log: a.Log(), Runs: projections.FreshRuns{Log: a.Log(), DB: a.DB(), Fresh: a.Runner}, Convs: a.Convs,
		HomeDir: a.Dir, Routes: a.providers, Kicker: a.Worker, Clock: a.Deps.Clock}
}
