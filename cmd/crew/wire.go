package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/gateways/scheduler"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/loop/consolidate"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/loop/notes"
	"github.com/my-agent-crew/crew/loop/summarize"
	"github.com/my-agent-crew/crew/loop/team"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/canvas"
	"github.com/my-agent-crew/crew/tools/desktop"
	"github.com/my-agent-crew/crew/tools/kit"
	"github.com/my-agent-crew/crew/tools/mcp"
	"github.com/my-agent-crew/crew/tools/memory"
	"github.com/my-agent-crew/crew/tools/pdf"
	"github.com/my-agent-crew/crew/tools/schedule"
	"github.com/nats-io/nuid"
	"github.com/tmc/langchaingo/llms"
	"go.etcd.io/bbolt"
)

// allTools is every registry tool, one registration per package: the
// built-ins, the loop's own, schedule_create, skill_read, the memory
// tools, the desktop tools, the web tools (nt: their settings) and the canvas tools (cv: the
// canvas service); nt and cv are nil for commands that only list or replay
// tools. Which of them an agent gets follows from each tool's declaration
// (Def.Default) and its agent.yaml.
func allTools(create *schedule.CreateTool, nt *netTools, cv *canvas.Service, teams *team.Runtime) []tools.Tool {
	out := append(tools.Builtins(), loop.Tools()...)
	out = append(out, create, kit.SkillRead(), pdf.Read{})
	out = append(out, nt.tools()...)
	out = append(out, canvas.Tools(cv)...)
	out = append(out, team.Tools(teams)...)
	out = append(out, desktop.Tools()...)
	return append(out, memory.Tools()...)
}

// crewRuntime is the running crew: turn worker, scheduler, inbound door,
// approvals and what the web gateway serves.
type crewRuntime struct {
	ledger *budget.Ledger
	worker *loop.Worker
	// sched is the running scheduler on the process that runs the
	// singletons, else a door to it; schedCfg starts it.
	sched    *schedSlot
	schedCfg scheduler.Config
	jobs     *web.SchedulerJobs
	memory   *web.Memory
	inbound  *inbound.Inbound
	// approvals decides approvals by id (web forms and API, Telegram).
	approvals *inbound.Approvals
	questions *inbound.Questions
	// stops is the owner's stop (web, API, Telegram, crew stop).
	stops  *inbound.Stops
	db     *bbolt.DB
	runner *projections.Runner
	convs  *loop.Convs
	teams  *team.Runtime
	// background runs shell_run's background commands.
	background *loop.Background
	crew       *liveCrew
	// canvas applies the canvas rules for the tools and the REST API.
	canvas *canvas.Service
	// summaries summarizes and closes conversations (day end, on demand).
	summaries *summarize.Summarizer
	// stopWatch ends the crew's reload watch.
	stopWatch func()
	net       *netTools // the web tools' settings and the browsers
	routes    string    // what serve prints about models
	banner    string    // what the UI shows at the top, if anything
	dir       string    // the home
}

// startCrew wires the loop onto an open store.
// m is this process on a shared cluster (nil on the embedded server).
func startCrew(ctx context.Context, dir string, h *home.Home, st *store, runner *projections.Runner, m *member, getenv func(string) string, logger *slog.Logger) (*crewRuntime, error) {
	lw, err := wireLoop(ctx, dir, h, st, runner, m.holder(), getenv, logger)
	if err != nil {
		return nil, err
	}
	create, nt, cv, convs, teams, cr, pool, ledger, models, deps, note, override := lw.create, lw.net, lw.canvas, lw.convs, lw.teams, lw.crew, lw.pool, lw.ledger, lw.models, lw.deps, lw.note, lw.override
	mem := lw.memory
	sum := &summarize.Summarizer{Log: st.log, Convs: convs, Agents: cr.agent, Models: models, List: dayEndList(st.db, teams.Busy),
		WaitFor: runner.WaitFor, Location: h.Config.Location(), Clock: time.Now}
	lastSeq, err := st.log.Last(ctx, events.Root+".>")
	if err != nil {
		return nil, err
	}
	clean, err := home.MarkRunning(dir)
	if err != nil {
		return nil, err
	}
	var claim loop.Claimer
	if m != nil {
		// A run open now may have been cut by any peer's crash, not this
		// home's stop: it counts as interrupted (R-X-4).
		clean, claim = false, m.claim
	}
	w, err := loop.StartWorker(ctx, loop.WorkerConfig{
		Log: st.log, Convs: convs, Deps: deps, Logger: logger.With("component", "loop"),
		CleanStart: clean,
		Claim:      claim,
		SweepEvery: -1, // the scheduler runs the expiry sweep
		Agents:     cr.agent,
		Recover: func(ctx context.Context) ([]string, error) {
			if err := runner.WaitFor(ctx, lastSeq); err != nil {
				return nil, err
			}
			return projections.Recoverable(st.db)
		},
	})
	if err != nil {
		home.ClearRunning(dir) // nothing ran
		return nil, err
	}
	teams.Start(ctx, w.Kick)
	in := &inbound.Inbound{
		Convs: convs, Kick: w.Kick, Master: home.MasterID,
		HasAgent:    func(id string) bool { _, ok := cr.agent(id); return ok },
		Location:    h.Config.Location(),
		Clock:       time.Now,
		Autonomous:  func(id string) bool { a, _ := cr.agent(id); return a.Autonomous },
		Workspace:   func(id string) string { a, _ := cr.agent(id); return a.Workspace },
		ApprovalTTL: func(id, channel string) int { return cr.get().home.ApprovalTTL(id, channel) },
	}
	sweep := w.SweepOnce
	periodic := []scheduler.Periodic{}
	if m != nil {
		sweep = func(ctx context.Context) {
			// A peer may have asked for an approval this process never
			// loaded, or decided one it holds stale.
			if ids, err := projections.Recoverable(st.db); err == nil {
				for _, id := range ids {
					if pc, err := projections.GetConversation(st.db, id); err != nil || len(pc.PendingApprovals) == 0 {
						continue
					}
					if conv, err := convs.Get(ctx, id); err == nil {
						conv.Refresh(ctx)
					}
				}
			}
			w.SweepOnce(ctx)
		}
		periodic = append(periodic, scheduler.Periodic{Name: "budget-sweep", Every: 30 * time.Second, Run: func(ctx context.Context) {
			if err := ledger.SettleDead(ctx); err != nil {
				logger.Error("budget: settling what stopped processes left open", "err", err)
			}
		}})
	}
	schedCfg := scheduler.Config{
		Log: st.log, Convs: convs, Kick: w.Kick, Location: h.Config.Location(), Logger: logger.With("component", "scheduler"),
		RunScript: scheduler.ShellScripts(dir, cr.agent), RunConsolidate: mem.Job, SpillDir: filepath.Join(dir, "spill"),
		Periodic: append([]scheduler.Periodic{
			{Name: "approval-expiry", Every: 5 * time.Second, Run: sweep},
			{Name: "day-end", Every: 10 * time.Minute, Run: func(ctx context.Context) {
				select {
				case <-w.Recovered():
				default:
					return // the conversation list is still catching up
				}
				if err := sum.CloseDay(ctx); err != nil {
					logger.Error("day end: some conversations were not closed", "err", err)
				}
			}},
		}, periodic...),
	}
	sched := &schedSlot{}
	if m != nil {
		sched.nc = st.nc
	}
	create.Bind(jobAdder{sched})
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	cr.onReload = func(set *crewSet) {
		// A value added to <home>/env is redacted from now on; removed
		// ones stay redacted (they may still be in flight).
		events.Secrets().Load(set.home.EnvSecrets(), nil)
		set.home.ConfigSecrets()
		nt.reload(set.home, getenv)
		pool.Configure(set.mcp)
		if err := sched.SetProfile(watchCtx, set.profile); err != nil {
			logger.Error("schedules not reloaded", "err", err)
		}
	}
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		cr.watch(watchCtx, 2*time.Second)
	}()
	stop := func() { stopWatch(); <-watchDone; pool.Close() }
	banner := ""
	if len(override) == 1 && override[0] == "fake:echo" && h.Getenv("MY_AGENT_ROUTES", getenv) == "" {
		banner = "Running on fake:echo: no OPENROUTER_API_KEY and no reachable Ollama, so replies only echo your message. Add a key to the env file and restart."
	}
	return &crewRuntime{ledger: ledger, worker: w, sched: sched, schedCfg: schedCfg, jobs: &web.SchedulerJobs{DB: st.db, Location: h.Config.Location(), Scheduler: sched, Profile: cr.profile}, approvals: &inbound.Approvals{Log: st.log, DB: st.db, WaitFor: runner.WaitFor, Worker: w}, questions: &inbound.Questions{Log: st.log, DB: st.db, WaitFor: runner.WaitFor, Worker: w}, stops: &inbound.Stops{Log: st.log, DB: st.db, WaitFor: runner.WaitFor, Worker: w}, memory: &web.Memory{Service: mem, DB: st.db, WaitFor: runner.WaitFor, Location: h.Config.Location()}, inbound: in, db: st.db, runner: runner, convs: convs, teams: teams, background: deps.Background, crew: cr, canvas: cv, summaries: sum, routes: note, banner: banner, stopWatch: stop, dir: dir, net: nt}, nil
}

// Close stops the worker (serve stops the singletons first); the next
// start then knows this one stopped cleanly.
func (c *crewRuntime) Close() {
	c.stopWatch()
	c.teams.Close()
	c.worker.Close()
	c.background.Close() // kills the background commands; their ends are stored for the next start
	c.net.Close()
	home.ClearRunning(c.dir)
}

// startScheduler starts the scheduler (with its sweeps) on the process
// that runs the singletons; stop stops it.
func (c *crewRuntime) startScheduler(ctx context.Context) (stop func(), err error) {
	cfg := c.schedCfg
	cfg.Jobs = c.crew.profile()
	s, err := scheduler.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := c.sched.set(s); err != nil {
		s.Close()
		return nil, err
	}
	return func() {
		c.sched.set(nil)
		s.Close()
	}, nil
}

// pages wires the HTML site.
func (c *crewRuntime) pages(dir string, h *home.Home) *web.Pages {
	return &web.Pages{DB: c.db, Convs: c.convs, Crew: web.CrewRows(c.crew.list), Banner: c.banner, Home: dir, Location: h.Config.Location(), Clock: time.Now, WaitFor: c.runner.WaitFor,
		Workspace: func(id string) string { a, _ := c.crew.agent(id); return a.Workspace }}
}

// latestSummary reads the previous conversation's summary on a channel
// from the summaries projection, for the turn notes.
func latestSummary(db *bbolt.DB) notes.LatestSummary {
	return func(agent, channel, exclude string) (notes.Summary, bool, error) {
		sum, ok, err := projections.LatestSummary(db, agent, channel, exclude)
		return notes.Summary{Channel: channel, Conversation: sum.Conversation, Text: sum.Summary, LastAt: sum.LastAt}, ok, err
	}
}

// dayEndList lists the conversations for the day-end sweep from the
// conversations projection.
// A lead whose team still has work in hand is not settled (R-TEAM).
func dayEndList(db *bbolt.DB, teamBusy func(ctx context.Context, id string) bool) func(context.Context) ([]summarize.Conversation, error) {
	return func(ctx context.Context) ([]summarize.Conversation, error) {
		list, err := projections.ListConversations(db, 0)
		out := make([]summarize.Conversation, len(list))
		for i, c := range list {
			settled := c.Closed == nil && c.Status == projections.ConversationIdle && c.Queued == 0
			out[i] = summarize.Conversation{ID: c.ID, Channel: c.Channel, Day: c.Day,
				Settled: settled && (c.Day == "" || !teamBusy(ctx, c.ID))}
		}
		return out, err
	}
}

// jobAdder adapts the scheduler to schedule_create.
type jobAdder struct{ s *schedSlot }

func (a jobAdder) Add(ctx context.Context, j schedule.Job) error {
	err := a.s.Add(ctx, scheduler.Job{ID: j.ID, Agent: j.Agent, Name: j.Name, Cron: j.Cron, Prompt: j.Prompt, At: j.At, SourceConversation: j.SourceConversation})
	if errors.Is(err, scheduler.ErrInvalidJob) || errors.Is(err, scheduler.ErrJobExists) {
		return schedule.Refused(err)
	}
	return err
}

// loopWiring is what runs turns on an open store, for crew serve and for a
// fork run on a stopped home (crew replay --from-step): the models behind
// the budget ledger, the registry's tools, the crew, the conversations'
// writer and the turn's edges.
type loopWiring struct {
	create   *schedule.CreateTool
	net      *netTools
	canvas   *canvas.Service
	convs    *loop.Convs
	teams    *team.Runtime
	crew     *liveCrew
	pool     *mcp.Pool
	ledger   *budget.Ledger
	models   func(route string) (llms.Model, error)
	memory   *consolidate.Service // files persona proposals (deps.Proposer) and consolidates
	deps     loop.Deps
	note     string   // what serve prints about models
	override []string // the routes every agent runs on, if forced
}

// wireLoop wires what turns need onto st; nothing runs yet (the worker,
// scheduler and reload watch are the caller's).
// holder names this process's budget reservations on a shared cluster
// ("" for a command that is no crew serve, or the embedded server).
func wireLoop(ctx context.Context, dir string, h *home.Home, st *store, runner *projections.Runner, holder string, getenv func(string) string, logger *slog.Logger) (*loopWiring, error) {
	mdl, override, note, err := h.Models(ctx, getenv)
	if err != nil {
		return nil, err
	}
	create := schedule.NewCreateTool(time.Now)
	nt := newNetTools(dir, h, getenv, logger.With("component", "browser"))
	cv := &canvas.Service{Store: projections.CanvasStore{DB: st.db, NotFound: canvas.ErrNotFound}, Log: st.log, WaitFor: runner.WaitFor,
		MaxBytes: h.Config.CanvasMaxBytes, Master: home.MasterID, Clock: time.Now, NewID: nuid.Next}
	convs := loop.NewConvs(conversationLog(st.log), projections.Snapshots{DB: st.db})
	if n := h.Config.ConversationsInMemory; n > 0 {
		convs.SetIdleLimit(n)
	}
	var cr *liveCrew
	teams := team.New(team.Config{Log: st.log, Convs: convs, NewID: nuid.Next, Logger: logger.With("component", "team"), Home: dir,
		Agents: func(id string) (loop.Agent, bool) { return cr.agent(id) }})
	reg, err := tools.New(allTools(create, nt, cv, teams)...)
	if err != nil {
		return nil, err
	}
	cr = newCrew(dir, h, override, reg, logger.With("component", "crew"))
	pool := mcp.NewPool(home.CrewVersion(), cr.get().mcp, logger.With("component", "mcp"))
	// Every model call, whatever it is for, is reserved against the
	// budgets before it leaves (R-X-5).
	ledger, err := home.OpenLedger(ctx, st.log, func() *home.Home { return cr.get().home }, logger.With("component", "budget"), holder, st.alive())
	if err != nil {
		return nil, err
	}
	models := ledger.Models(mdl.Model)
	mem := newMemory(st.log, h, cr.agent, models, logger.With("component", "memory"))
	nc := st.nc
	deps := loop.Deps{
		Proposer: mem,
		Models:   models,
		Tools:    reg,
		Clock:    time.Now,
		Location: h.Config.Location(),
		SpillDir: filepath.Join(dir, "spill"),
		HomeDir:  dir,
		Roster:   cr.roster,
		Spec:     cr.spec,
		NewID:    nuid.Next,
		MCP:      pool,
		Live: func(conv, runID string, d llm.Delta) {
			b, _ := json.Marshal(map[string]any{"run_id": runID, "delta": d})
			nc.Publish(events.LiveSubject(conv), b)
		},
		Teams:      teams,
		Background: loop.NewBackground(convs, nuid.Next, logger.With("component", "background")),
	}
	convs.SetOpener(notes.WithCanvas(notes.Opener(dir, cr.agent, latestSummary(st.db), h.Config.Location(), time.Now, logger.With("component", "notes")),
		cv, logger.With("component", "notes")))
	return &loopWiring{create: create, net: nt, canvas: cv, convs: convs, teams: teams, crew: cr, pool: pool, ledger: ledger,
		models: models, memory: mem, deps: deps, note: note, override: override}, nil
}
