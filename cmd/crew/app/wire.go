package app

import (
	"context"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/cluster"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/loop/consolidate"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/loop/notes"
	"github.com/my-agent-crew/crew/loop/team"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/projections/search"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/browser"
	"github.com/my-agent-crew/crew/tools/canvas"
	"github.com/my-agent-crew/crew/tools/desktop"
	"github.com/my-agent-crew/crew/tools/kit"
	"github.com/my-agent-crew/crew/tools/mcp"
	"github.com/my-agent-crew/crew/tools/memory"
	"github.com/my-agent-crew/crew/tools/pdf"
	"github.com/my-agent-crew/crew/tools/recall"
	"github.com/my-agent-crew/crew/tools/schedule"
	"github.com/my-agent-crew/crew/tools/web"
	"github.com/nats-io/nuid"
)

// allTools is every registry tool, one registration per tool family: the
// built-ins (workspace, shell), the loop's own, schedule_create,
// skill_read, pdf_read, the web and browser tools, the canvas tools, the
// team tools, the desktop tools and the memory tools, each family with
// its service of w (nil where a command lists tools without running them:
// web_search has no provider, the browser tools no browser). Which of them an agent gets follows from
// each tool's declaration (Def.Default) and its agent.yaml. A new tool
// family is one line here. s are the services the families' tools keep
// (the home's secrets, the sandbox every child process starts in, the
// background runner, the persona proposer, the clock and the owner's
// timezone); a call brings only its own facts
// (tools.Env).
func allTools(s tools.Services, w *wiring) []tools.Tool {
	out := append(tools.Builtins(s), loop.Tools()...)
	out = append(out, recall.Tools(w.recall, s)...)
	out = append(out, w.create, kit.SkillRead(), pdf.Tool(s.Sandbox))
	out = append(out, w.crons.Tools()...)
	out = append(out, web.Tools(w.search, nil, s.Sandbox)...) // dialling through the one wall
	out = append(out, browser.Tools(w.browsers)...)
	out = append(out, canvas.Tools(w.Canvas, s)...)
	out = append(out, team.Tools(w.Teams)...)
	out = append(out, desktop.Tools()...)
	return append(out, memory.Tools(s, memory.WithRanker(search.Rank))...)
}

// wiring is what runs turns on the store, built the same for every entry
// point: the models behind the budget ledger, the registry's tools, the
// crew, the conversations' writer and the turn's edges. Nothing runs yet.
type wiring struct {
	// Registry is every tool of every family.
	Registry *tools.Registry
	// Crew is the loaded crew, reloaded when its files change (Serve).
	Crew *Crew
	// Deps is what a turn is given.
	Deps loop.Deps
	// Convs is the conversations' one writer each.
	Convs *loop.Convs
	// Models are the models behind the budget ledger: every call a turn
	// or the harness makes is reserved before it leaves (R-X-5).
	Models llm.Models
	Ledger *budget.Ledger // nil with ReadOnly
	Canvas *canvas.Service
	Teams  *team.Runtime
	// Memory files persona proposals (Deps.Proposer) and consolidates.
	Memory *consolidate.Service
	// Routes is what serve prints about the models; Override the routes
	// every agent runs on, if forced (MY_AGENT_ROUTES, fake:echo).
	Routes   string
	Override []string

	create    *schedule.CreateTool
	crons     *schedule.CronTools
	providers *llm.Providers // the keys read at Open: serve drops them from the environment after
	search    *web.Settings  // the provider web_search asks (replaced on reload)
	browsers  *browser.Manager
	pool      *mcp.Pool
	// recall is what the recall tools search: serve's index, once open.
	recall *search.Recall
	// background runs shell_run's background commands (Deps.Background).
	background *loop.Background
}

// wire builds a's wiring; with ReadOnly there is no store under it (no
// ledger, and the services' stores are absent: their tools never run).
func wire(ctx context.Context, a *App) (*wiring, error) {
	h, getenv, logger := a.Home, a.opts.Getenv, a.log
	// The routes every agent runs on (MY_AGENT_ROUTES, or fake:echo with
	// no provider reachable) are decided as serve decides them, replay
	// included: the roster in every system prompt names them.
	mdl, override, note, err := models(ctx, h, getenv)
	if err != nil {
		return nil, err
	}
	svc := tools.Services{Secrets: a.opts.Secrets, Sandbox: a.box, Clock: time.Now, Location: h.Config.Location()}
	w := &wiring{Routes: note, Override: override, create: schedule.NewCreateTool(svc), crons: &schedule.CronTools{}, providers: Providers(h, getenv)}
	log, db := a.Log(), a.DB()
	cr := &Crew{}
	w.Models = mdl
	if a.opts.Models != nil {
		w.Models = a.opts.Models
	}
	if log != nil {
		// First, so every model the crew calls, the memory service's too,
		// is behind it. The caps are the home's in force (a reload changes
		// them); on a cluster, Holder names this process and Alive tells
		// whether another still runs.
		if w.Ledger, err = budget.Open(ctx, budget.Config{Log: log, Location: h.Config.Location(), Clock: time.Now, NewID: nuid.Next,
			Logger: logger.With("component", "budget"), Catalog: h.Config.Catalog(), Caps: func() budget.Caps { return cr.Current().With.home.Caps() },
			Holder: a.member.Holder(), Alive: cluster.Alive(a.store.Leases())}); err != nil {
			return nil, err
		}
		w.Models = w.Ledger.Models(w.Models)
	}
	w.search, w.browsers = &web.Settings{}, browser.NewManager(browser.Config{Home: a.Dir, Logger: logger.With("component", "browser")})
	w.search.SetSearch(h.Config.WebSearch.Keyed(h.Lookup(getenv))) // browsers start on first use
	w.Canvas = &canvas.Service{Log: log, Fresh: a.freshness(),
		MaxBytes: h.Config.CanvasMaxBytes, Master: home.MasterID, Clock: time.Now, NewID: nuid.Next}
	w.recall = search.NewRecall(home.MasterID)
	// Without a store (ReadOnly) the conversations refuse to write and
	// keep no snapshots or notes, and the canvas tools never run.
	cc := loop.ConvsConfig{Log: loop.ReadOnlyLog{Secrets: a.opts.Secrets}, IdleLimit: h.Config.ConversationsInMemory, Logger: logger.With("component", "conversations")}
	if db != nil {
		w.Canvas.Store = projections.CanvasStore{DB: db, NotFound: canvas.ErrNotFound}
		cc.Log, cc.Snapshots = a.opts.ConversationLog(log), projections.Snapshots{DB: db}
		cc.Opener = notes.New(notes.Config{Home: a.Dir, Crew: cr, Summaries: projections.ChannelSummaries{DB: db}, Canvas: w.Canvas,
			Earlier: w.recall.Earlier, Location: h.Config.Location(), Logger: logger.With("component", "notes")})
	}
	w.Convs = loop.NewConvsFrom(cc)
	w.Teams = team.New(team.Config{Log: log, Convs: w.Convs, Logger: logger.With("component", "team"), Home: a.Dir, Crew: cr, Sandbox: a.box})
	// The tools' services, before the registry: memory files persona proposals.
	w.Memory = consolidate.New(consolidate.Config{Log: log, Models: w.Models, Clock: loop.WallClock{Zone: h.Config.Location()},
		Logger: logger.With("component", "memory"), Crew: cr})
	w.background = loop.NewBackground(w.Convs, a.box, nuid.Next, logger.With("component", "background")).OnCluster(a.member.Holder(), a.member.Alive)
	svc.Background, svc.Proposer = w.background, w.Memory
	if w.Registry, err = tools.New(allTools(svc, w)...); err != nil {
		w.close()
		return nil, err
	}
	files := crewFiles{a.Dir, override, w.Registry, getenv, a.opts.Secrets}
	cr.Start(files, home.MasterID, logger.With("component", "crew"), files.build(h))
	w.Crew = cr
	w.pool = mcp.NewPool(mcp.PoolConfig{Version: home.CrewVersion(), Servers: cr.Current().With.mcp, Sandbox: a.box, Secrets: a.opts.Secrets,
		Restarts: log, Logger: logger.With("component", "mcp")})
	w.Deps = loop.Deps{
		Models:  w.Models,
		Tools:   w.Registry,
		Crew:    cr,
		Clock:   loop.WallClock{Zone: h.Config.Location()},
		HomeDir: a.Dir,
		Live:    loop.LiveOn(a.Conn()),
		Services: loop.Services{
			MCP:        w.pool,
			Teams:      w.Teams,
			Background: w.background,
			Sandbox:    a.box,
		},
	}
	if a.store != nil {
		w.Deps.Services.Scripts = a.scripts
		if w.Deps.Services.Spills, err = tools.OpenSpills(ctx, a.store.Conn(), a.Dir, tools.SpillMaxAge, a.store.Server().StreamSync(events.ObjectsStream(events.SpillBucket)), logger); err != nil {
			w.close()
			return nil, err
		}
	}
	return w, nil
}

// close stops what the wiring holds: teams, background commands, browsers, MCP.
func (w *wiring) close() {
	if w.Ledger != nil {
		w.Ledger.Close() // stores the settlements no next call carried
	}
	w.Teams.Close()
	w.background.Close() // kills the background commands; their ends are stored for the next start
	w.browsers.Close()
	w.pool.Close()
	w.recall.Close()
}
