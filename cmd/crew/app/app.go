// Package app is crew's composition root: Open builds the whole crew of a
// home once — the event log and the projections, the registry with every
// tool family, the providers behind the budget ledger, the catalog and the
// roster, the conversations' writers and the turn worker — and Close takes
// it down. Every entry point builds it here: crew serve (which adds the
// HTTP server and the singletons), replay, the fork, memory consolidate,
// projections rebuild, doctor, export, the end-to-end tests' in-process
// helpers and the benchmarks. What differs between them is an Option,
// never a second wiring (docs/adr/0007-one-composition-root.md).
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/cluster"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/projections/search"
	"github.com/my-agent-crew/crew/tools/script"
	"github.com/my-agent-crew/crew/tools/shell"
	"github.com/nats-io/nats.go"
	"go.etcd.io/bbolt"
)

// Options say how a command's crew differs from crew serve's. The zero
// value opens the store, runs the projections and a worker that takes up
// nothing but what it is kicked for (a fork).
type Options struct {
	// Getenv reads the process environment (os.Getenv); nil reads none.
	Getenv func(string) string
	// Logger receives the crew's logs; nil discards them.
	Logger *slog.Logger
	// Secrets are the home's secrets (home.LoadSecrets taught them): the
	// log is opened with them, so every append, live delta, Telegram
	// message and file written for an agent is redacted with them. nil: a
	// Redactor of the App's own that knows none yet.
	Secrets *events.Redactor
	// As names this process to its peers on a shared cluster ("serve",
	// "replay --from-step", "memory consolidate"): a command that runs
	// turns or model calls joins the cluster while it runs, so a peer
	// neither settles its reservations nor runs its conversations. ""
	// joins no cluster.
	As string
	// StoreOnly opens the log and the projections database and builds
	// nothing that runs (export, projections rebuild, team, doctor).
	StoreOnly bool
	// ReadOnly builds the crew — the same registry, agents, roster and
	// catalog — without opening the store: nothing is written and no tool
	// runs (crew replay, doctor's checks).
	ReadOnly bool
	// NoWorker builds the crew on the store but starts no worker: only
	// the harness's own model calls run (memory consolidate).
	NoWorker bool
	// Serve is crew serve: shell commands are tracked (those a crashed
	// predecessor left are killed), the HTTP port is taken on Listen, the
	// home is marked running, the worker takes up what a stop left, and
	// the crew follows its files.
	Serve  bool
	Listen string
	// MemoryLimit is the process's soft memory limit in bytes, set at
	// Open (serve's: home.Config.MemoryLimit); 0 leaves it alone. Near it
	// the collector runs before the heap doubles and the scavenger hands
	// freed pages back (docs/performance.md, "Memory").
	MemoryLimit int64
	// Projections are the read models run (nil: projections.All); the
	// test build holds them back to show a server catching up.
	Projections func() []projections.Projection
	// Models, when set, answers every model call in place of the home's
	// providers (a benchmark's scripted model); it is still behind the
	// budget ledger like the providers' models.
	Models llm.Models
	// ConversationLog wraps what the conversations append through (nil:
	// the log); the test build's crash point.
	ConversationLog func(loop.Appender) loop.Appender
	// TelegramCheckpoint is the Telegram gateway's fault-injection hook
	// (telegram.Config.Checkpoint; nil: none); the test build's crash point.
	TelegramCheckpoint func(point string)
	// JobRetryDelays are the scheduler's waits before a failed one-shot
	// fires again (nil: scheduler.DefaultRetryDelays); the test build
	// shortens them.
	JobRetryDelays []time.Duration
}

// App is one home's running crew.
type App struct {
	Dir  string
	Home *home.Home
	opts Options
	log  *slog.Logger

	store *events.Store // nil with ReadOnly
	// The home's state beside the log (issue 30 item 4), shared on a
	// cluster: the scripts' stores and the web logins (nil with ReadOnly).
	scripts  *script.Store
	sessions *web.Sessions
	member   *cluster.Member
	// box starts every child process the crew's agents cause (nil with
	// ReadOnly: nothing starts).
	box *shell.Sandbox
	// closeOnce makes Close safe to call twice (a test's cleanup after
	// an explicit Close).
	closeOnce sync.Once
	closeErr  error
	// Runner runs the projections (nil with StoreOnly or ReadOnly).
	Runner *projections.Runner
	// Listener is the HTTP port (Serve only).
	Listener net.Listener
	startSeq uint64

	*wiring  // nil with StoreOnly
	*running // nil without a worker

	cancel context.CancelFunc

	singletons cluster.Singletons // what RunSingletons started; Close stops it
}

// Open builds the crew of the home at dir (loaded as h) as opts say.
// home.ErrStoreBusy means another process holds the store.
func Open(ctx context.Context, dir string, h *home.Home, opts Options) (_ *App, err error) {
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Secrets == nil {
		opts.Secrets = events.NewRedactor()
	}
	if opts.Projections == nil {
		opts.Projections = projections.All
	}
	if opts.ConversationLog == nil {
		opts.ConversationLog = func(a loop.Appender) loop.Appender { return a }
	}
	a := &App{Dir: dir, Home: h, opts: opts, log: opts.Logger}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	ctx, a.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if opts.MemoryLimit > 0 { // before the store: the server's rebuild at start is under it too
		debug.SetMemoryLimit(opts.MemoryLimit)
	}
	if !opts.ReadOnly {
		if err := a.openStore(ctx); err != nil {
			return nil, err
		}
		if err := a.join(ctx); err != nil {
			return nil, err
		}
		// Before the crew starts, so the first command (a resumed run, a
		// job) already runs under the owner's network policy.
		if a.box, err = shell.New(h.Config.ShellNetwork()); err != nil {
			return nil, fmt.Errorf("config.yaml: %w", err)
		}
	}
	if opts.StoreOnly {
		return a, nil
	}
	if opts.Serve {
		// Commands a crashed server left running die before recovery
		// closes their calls; from now on every command is recorded there.
		if killed, err := a.box.Track(filepath.Join(dir, "data", "shell")); err != nil || killed > 0 {
			a.log.Warn("commands left by a previous server", "killed", killed, "err", err)
		}
	}
	if a.store != nil {
		if a.Runner, err = projections.Open(ctx, a.store.Log(), a.store.DB(), a.log.With("component", "projections"), opts.Projections()...); err != nil {
			return nil, err
		}
		// Ready once projections have caught up with what the log held at start.
		if a.startSeq, err = a.store.Log().Last(ctx, "crew.>"); err != nil {
			return nil, err
		}
		if opts.Serve {
			// The pages of projections.db that catch-up and page views
			// touch would stay in the resident set: handed back every
			// few seconds (docs/performance.md, "Memory").
			go projections.ReleaseMappedEvery(ctx, a.store.DB(), releaseMappedEvery)
		}
	}
	if opts.Serve {
		if a.Listener, err = net.Listen("tcp", opts.Listen); err != nil {
			return nil, fmt.Errorf("listen %s: %w", opts.Listen, err)
		}
	}
	if a.wiring, err = wire(ctx, a); err != nil {
		return nil, err
	}
	if opts.Serve && a.store != nil {
		// The search index catches up in the background: nothing waits.
		a.openSearch()
	}
	if opts.ReadOnly || opts.NoWorker {
		return a, nil
	}
	if a.running, err = start(ctx, a); err != nil {
		return nil, err
	}
	return a, nil
}

// openSearch opens serve's recall index beside the projections
// (search.Recall.Serve), its embeddings behind the ledger. The index
// answers at once from what it has; it catches up once the projections
// have.
func (a *App) openSearch() {
	cfg := search.Config{Dir: search.IndexDir(a.Dir), Log: a.Log(), Start: a.startSeq, After: a.Runner, ReleaseEvery: releaseMappedEvery,
		CatchUpGC: search.CatchUpGC, Logger: a.log.With("component", "search")}
	if e := embedder(a.Home, a.opts.Getenv); e != nil {
		cfg.Embedder, cfg.Usage = a.Ledger.Embedder(e), budget.EmbedCalls(a.Log(), a.Home.Config.Catalog(), cfg.Logger)
	}
	a.recall.Serve(cfg)
}

// releaseMappedEvery is how often serve hands projections.db's and the
// recall index's touched pages back (docs/performance.md, "Memory").
const releaseMappedEvery = time.Second

// openStore locks the home's data dir and opens its store as config.yaml
// says (the embedded server on data/nats, or nats.url), and beside the
// log the scripts' stores and the web logins.
func (a *App) openStore(ctx context.Context) error {
	lock, err := home.LockData(a.Dir)
	if err != nil {
		return err
	}
	cfg, err := a.Home.Config.NATS.Store(a.Dir)
	if err != nil {
		lock.Close()
		return err
	}
	cfg.Secrets, cfg.Lock, cfg.Logger = a.opts.Secrets, lock, a.log.With("component", "nats")
	if a.store, err = events.OpenStore(ctx, cfg); err != nil {
		return err
	}
	if a.scripts, err = script.OpenStore(ctx, a.store.Conn(), a.Dir, a.store.Server().StreamSync(events.BucketStream(events.ScriptBucket)), cfg.Logger); err != nil { // an older home's files move in
		return err
	}
	a.sessions, err = web.OpenSessions(ctx, a.store.Conn(), filepath.Join(cfg.Dir, "web-sessions.json"), a.store.Server().StreamSync(events.BucketStream(events.SessionBucket)), cfg.Logger)
	return err
}

// join takes this process's life lease on a shared cluster, when the
// command runs turns or model calls (opts.As); a lost lease ends Lost.
func (a *App) join(ctx context.Context) (err error) {
	if a.opts.As == "" || a.store.Leases() == nil {
		return nil
	}
	a.member, err = cluster.Join(ctx, a.store.Leases(), a.store.Log().Node(), a.Dir, a.opts.As, a.log.With("component", "cluster"))
	return err
}

// Sandbox is where every child process of the crew starts (nil with
// ReadOnly).
func (a *App) Sandbox() *shell.Sandbox { return a.box }

// Log is the event log (nil with ReadOnly).
func (a *App) Log() *events.Log { return a.store.Log() }

// DB is the projections database (nil with ReadOnly).
func (a *App) DB() *bbolt.DB { return a.store.DB() }

// Conn is the NATS connection (nil with ReadOnly).
func (a *App) Conn() *nats.Conn { return a.store.Conn() }

// Lost is closed when this process lost its cluster lease: its peers
// think it dead and take its work over, so it must stop
// (cluster.Member.Lost; never without a cluster).
func (a *App) Lost() <-chan struct{} { return a.member.Lost() }

// Close takes the crew down in the reverse order of Open: the singletons,
// the worker and what runs beside it, the HTTP port, the projections, the
// cluster lease, the store. A second Close returns the first's answer.
func (a *App) Close() error {
	a.closeOnce.Do(func() { a.closeErr = a.close() })
	return a.closeErr
}

func (a *App) close() error {
	a.singletons.Stop()
	if a.running != nil {
		a.running.close(a)
	}
	if a.wiring != nil {
		a.wiring.close()
	}
	if a.running != nil && a.running.marked {
		home.ClearRunning(a.Dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if a.Listener != nil {
		a.Listener.Close()
	}
	var errs []error
	if a.Runner != nil {
		errs = append(errs, a.Runner.Close(ctx))
	}
	if a.cancel != nil {
		a.cancel()
	}
	if a.member != nil {
		a.member.Close()
	}
	if a.store != nil {
		errs = append(errs, a.store.Close())
	}
	return errors.Join(errs...)
}

// Health is /healthz: ready once the projections have caught up with
// what the log held at start; its details carry the turn worker's, the
// event store connections', the recall index's, the cluster member's
// counters and serve's memory limit (docs/api.md says what each means).
func (a *App) Health(ctx context.Context) (bool, any) {
	ready, statuses := a.Runner.Ready(ctx, a.startSeq)
	details := map[string]any{"projections": statuses}
	if a.running != nil && a.Worker != nil {
		details["turns"] = a.Worker.Stats()
	}
	if a.store != nil {
		details["event_store"] = a.store.Stats()
	}
	if a.member != nil {
		details["cluster"] = a.member.Stats()
	}
	if h, ok := a.recall.Health(statuses); ok {
		details["recall"] = h
	}
	if a.opts.Serve {
		details["memory"] = events.ProcessMemory()
	}
	return ready, details
}

// CatchingUp says how many events the projections still have to apply
// of what the log held at start (projections.Runner.CatchingUp).
func (a *App) CatchingUp(ctx context.Context) (uint64, bool) {
	return a.Runner.CatchingUp(ctx, a.startSeq)
}

// freshness is the projections' Freshness, nil without a Runner (ReadOnly,
// StoreOnly): a nil *Runner in the interface would look like one.
func (a *App) freshness() projections.Freshness {
	if a.Runner == nil {
		return nil
	}
	return a.Runner
}
