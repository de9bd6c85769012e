package app

import (
	"context"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/gateways/scheduler"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/summarize"
	"github.com/my-agent-crew/crew/projections"
	"github.com/nats-io/nats.go"
)

// running is the crew at work on the store: the turn worker, the
// gateways' doors, the summarizer, the scheduler's slot (its scheduler
// runs on the process that runs the singletons) and the reload watch.
type running struct {
	Worker *loop.Worker
	// Doors are the gateways' ways in: Inbound, Approvals, Questions, Stops.
	inbound.Doors
	// Summaries summarizes and closes conversations (day end, on demand).
	Summaries *summarize.Summarizer
	// Scheduler is the running scheduler on the process that runs the
	// singletons, else a door to it.
	Scheduler *scheduler.Slot
	jobs      *web.SchedulerJobs // the jobs' view and controls (web, the crons tool)
	stopWatch func()
	stopTeams func() // a fork's team passes (serve's run with the singletons)
	marked    bool   // the home is marked running (Serve)
}

// start starts the worker on a's wiring. With Serve the worker takes up
// what a stop or a crash left (recovery) and the crew follows its files;
// otherwise (a fork) it runs only what it is kicked for.
func start(ctx context.Context, a *App) (*running, error) {
	st, h, w, logger := a.store, a.Home, a.wiring, a.log
	r := &running{stopWatch: func() {}}
	cfg := loop.WorkerConfig{Log: st.Log(), Convs: w.Convs, Deps: w.Deps,
		Logger: logger.With("component", "loop"), SweepEvery: -1, Claim: a.member.Claimer(), TurnsInFlight: h.Config.TurnsInFlight}
	if a.opts.Serve {
		lastSeq, err := st.Log().Last(ctx, events.Root+".>")
		if err != nil {
			return nil, err
		}
		clean, err := home.MarkRunning(a.Dir)
		if err != nil {
			return nil, err
		}
		r.marked = true
		// On a cluster a run open now may have been cut by any peer's
		// crash, not this home's stop: it counts as interrupted (R-X-4).
		cfg.CleanStart = clean && a.member == nil
		cfg.Recover = func(ctx context.Context) ([]string, error) {
			if err := a.Runner.WaitFor(ctx, lastSeq); err != nil {
				return nil, err
			}
			return projections.Recoverable(st.DB())
		}
		cfg.LeftTasks = func(context.Context) ([]string, error) { return projections.LeftTasks(st.DB()) }
	}
	var err error
	if r.Worker, err = loop.StartWorker(ctx, cfg); err != nil {
		if r.marked {
			home.ClearRunning(a.Dir) // nothing ran
		}
		return nil, err
	}
	w.Teams.Bind(r.Worker)
	if !a.opts.Serve {
		// A fork runs its own teams; serve runs them on the leader only
		// (RunSingletons).
		r.stopTeams = w.Teams.Run(ctx)
	}
	r.Summaries = &summarize.Summarizer{Log: st.Log(), Convs: w.Convs, Crew: w.Crew, Models: w.Models, List: scheduler.DayEndList(st.DB(), w.Teams.Busy),
		Fresh: a.Runner, Clock: w.Deps.Clock}
	r.Doors = inbound.NewDoors(&inbound.Inbound{Convs: w.Convs, Kick: r.Worker, Master: home.MasterID, Crew: w.Crew, Clock: w.Deps.Clock, Home: a.Dir},
		inbound.ByID{Log: st.Log(), DB: st.DB(), Fresh: a.Runner, Worker: r.Worker})
	var standbys *nats.Conn // on a cluster, a standby asks the leader's scheduler
	if a.member != nil {
		standbys = st.Conn()
	}
	r.Scheduler = scheduler.NewSlot(standbys, scheduler.Config{
		Log: st.Log(), Convs: w.Convs, Kick: r.Worker, Location: h.Config.Location(), Logger: a.log.With("component", "scheduler"),
		RunScript: scheduler.ShellScripts(a.Dir, w.Crew, a.box), RunConsolidate: w.Memory.Job, RetryDelays: a.opts.JobRetryDelays,
		Periodic: scheduler.Sweeps{DB: st.DB(), Convs: w.Convs, Worker: r.Worker, Summaries: r.Summaries, Ledger: w.Ledger,
			Cluster: a.member != nil, Logger: a.log}.Periodic(),
	})
	w.create.Bind(r.Scheduler.Adder())
	r.jobs = &web.SchedulerJobs{DB: st.DB(), Location: h.Config.Location(), Scheduler: r.Scheduler,
		Profile: w.Crew.Profile, Disabled: w.Crew.Disabled, Toggle: w.Crew.SetScheduleEnabled, Log: st.Log(), Fresh: a.freshness()}
	w.crons.Bind(r.jobs.Crons())
	if a.opts.Serve {
		r.watch(ctx, a)
	}
	return r, nil
}

// watch reloads the crew when its files change, until the crew closes.
func (r *running) watch(ctx context.Context, a *App) {
	w := a.wiring
	watchCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	w.Crew.Before(func(l *loop.Loaded[crewSet]) {
		// A value added to <home>/env is redacted from now on; removed
		// ones stay redacted (they may still be in flight).
		set := l.With
		set.home.LoadSecrets(a.opts.Secrets, nil)
		w.search.SetSearch(set.home.Config.WebSearch.Keyed(set.home.Lookup(a.opts.Getenv)))
		w.pool.Configure(set.mcp)
		if err := r.Scheduler.SetProfile(watchCtx, set.profile); err != nil {
			a.log.Error("schedules not reloaded", "err", err)
		}
	})
	stopWatch := w.Crew.Watch(watchCtx, 2*time.Second)
	r.stopWatch = func() { stop(); stopWatch() }
}

// close stops the reload watch, the teams and the worker (App.Close
// then clears the running mark: the next start knows this one stopped
// cleanly).
func (r *running) close(a *App) {
	r.stopWatch()
	if r.stopTeams != nil {
		r.stopTeams()
	}
	a.wiring.Teams.Close()
	r.Worker.Close()
}
