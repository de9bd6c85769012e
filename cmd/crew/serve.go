package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/telegram"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/tools/shell"
)

func runServe(ctx context.Context, env *cliEnv, args []string) error {
	fs, homeFlag := newFlags(env, "serve")
	listen := fs.String("listen", "", "HTTP address (default config.yaml listen, else 127.0.0.1:7420); non-loopback needs an auth token, generated into <home>/env if none is set")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	dir, err := homeDir(env, *homeFlag)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "config.yaml")); errors.Is(err, os.ErrNotExist) {
		if _, err := home.Init(dir); err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "created home at %s\n", dir)
	}
	h, err := loadHome(env, dir)
	if err != nil {
		return err
	}
	addr := *listen
	if addr == "" {
		addr = h.Config.Listen
	}
	// Secrets first: written to <home>/env before anything reads it.
	key, err := h.AuditKey(env.getenv)
	if err != nil {
		return err
	}
	token, generated, err := h.ServeAuth(addr, env.getenv)
	if err != nil {
		return err
	}
	if err := home.CheckListen(addr, token); err != nil {
		return err
	}
	// The token, however it was set or made, is never written down.
	if token != "" {
		events.Secrets().Add("CREW_AUTH_TOKEN", token)
	}
	sessions, err := web.OpenSessions(filepath.Join(dataDir(dir), "web-sessions.json"))
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(events.Secrets().Writer(env.stderr), &slog.HandlerOptions{Level: slog.LevelInfo}))

	start := time.Now()
	st, err := openStore(ctx, dir, h.Config, logger.With("component", "nats"))
	if errors.Is(err, home.ErrStoreBusy) {
		if info, ierr := home.ReadServeInfo(dir); ierr == nil {
			return fmt.Errorf("%w (pid %d, %s)", err, info.PID, info.URL)
		}
	}
	if err != nil {
		return err
	}
	defer st.Close()
	// On a cluster, other crew processes may share the log: this one
	// joins them (R-ES-8).
	var m *member
	if st.srv == nil {
		if m, err = joinCluster(ctx, st, dir, "serve", logger.With("component", "cluster")); err != nil {
			return err
		}
		defer m.Close()
		var stop context.CancelFunc
		ctx, stop = context.WithCancel(ctx)
		defer stop()
		go func() {
			select {
			case <-m.lost():
				logger.Error("lost this process's lease (the cluster was unreachable for its whole TTL; peers take its work over): stopping")
				stop()
			case <-ctx.Done():
			}
		}()
	}
	// Commands a crashed server left running die before recovery closes
	// their calls; from now on every command is recorded there.
	if killed, err := shell.Track(filepath.Join(dataDir(dir), "shell")); err != nil || killed > 0 {
		logger.Warn("commands left by a previous server", "killed", killed, "err", err)
	}

	runner, err := projections.Open(ctx, st.log, st.db, logger.With("component", "projections"), servedProjections()...)
	if err != nil {
		return err
	}
	defer runner.Close(context.WithoutCancel(ctx))
	// Ready once projections have caught up with what the log held at start.
	startSeq, err := st.log.Last(ctx, "crew.>")
	if err != nil {
		return err
	}
	health := func(ctx context.Context) (bool, any) {
		ready, statuses := runner.Ready(ctx, startSeq)
		return ready, map[string]any{"projections": statuses}
	}
	// HTTP answers from the start; until the projections have caught up
	// with what the log held, /healthz and every page say so.
	var caughtUp atomic.Bool
	catchingUp := func(ctx context.Context) (uint64, bool) {
		if caughtUp.Load() {
			return 0, false
		}
		ready, statuses := runner.Ready(ctx, startSeq)
		var left uint64
		for _, st := range statuses {
			if st.Error != "" {
				return 0, false // stopped, not catching up: /healthz says why
			}
			if st.Checkpoint < startSeq {
				left = max(left, startSeq-st.Checkpoint)
			}
		}
		if ready {
			caughtUp.Store(true)
		}
		return left, !ready
	}

	// Before the crew starts, so the first command (a resumed run, a job)
	// already runs under the owner's network policy.
	if err := shell.SetNetwork(shell.Network{Ports: h.Config.ShellPorts, Hosts: h.Config.ShellHosts}); err != nil {
		return fmt.Errorf("config.yaml: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	defer ln.Close()

	c, err := startCrew(ctx, dir, h, st, runner, m, env.getenv, logger)
	if err != nil {
		return err
	}
	defer c.Close()
	// The singletons run on one process: here without a cluster, on the
	// leader with one.
	telegramToken := h.Getenv("TELEGRAM_BOT_TOKEN", env.getenv)
	if telegramToken != "" && h.Agents[home.MasterID] == nil {
		return errors.New("telegram: TELEGRAM_BOT_TOKEN is set but the master agent is not loaded")
	}
	startSingletons := func(ctx context.Context) (func(), error) {
		var s singletons
		stop, err := c.startScheduler(ctx)
		if err != nil {
			return nil, err
		}
		s.add(stop)
		if telegramToken != "" {
			g, err := startTelegram(ctx, telegramToken, dir, h, st, c, logger)
			if err != nil {
				s.stop()
				return nil, err
			}
			s.add(g.Close)
			fmt.Fprintf(env.stdout, "telegram: polling, serving chats %v\n", h.Agents[home.MasterID].Telegram.AllowedChatIDs)
		}
		return s.stop, nil
	}
	if m == nil {
		stop, err := startSingletons(ctx)
		if err != nil {
			return err
		}
		defer stop()
	} else {
		leadCtx, stopLead := context.WithCancel(ctx)
		leadDone := make(chan struct{})
		go func() {
			defer close(leadDone)
			m.lead(leadCtx, startSingletons)
		}()
		takeDone := make(chan struct{})
		go func() {
			defer close(takeDone)
			m.takeOver(leadCtx, c.worker)
		}()
		adoptDone := make(chan struct{})
		go func() {
			defer close(adoptDone)
			m.adopt(leadCtx, st.db, c.worker)
		}()
		defer func() { stopLead(); <-leadDone; <-takeDone; <-adoptDone }()
	}

	forks := forker{log: st.log, db: st.db, convs: c.convs, dir: dir, callable: callable(h, env.getenv), kick: c.worker.Kick, waitFor: runner.WaitFor}
	// Model clients and the Telegram gateway hold their keys now.
	home.DropSecretEnv(env.environ, env.unsetenv)

	url := home.ReachableURL(ln.Addr())
	srv := &http.Server{
		Handler: web.New(web.Config{
			Log:    st.log,
			Views:  web.ProjectionViews{DB: st.db, Convs: c.convs},
			Pages:  c.pages(dir, h),
			Jobs:   c.jobs,
			Memory: c.memory,
			Usage: &web.Usage{DB: st.db, Location: h.Config.Location(), Log: st.log, WaitFor: c.runner.WaitFor,
				Budget: func() any { return c.ledger.Today() }},
			Canvas:        c.canvasAPI(),
			Conversations: c.summaries,
			Inbound:       c.inbound,
			Approvals:     c.approvals,
			Questions:     c.questions,
			Stops:         c.stops,
			Live:          events.LiveFeed(st.nc),
			Health:        health,
			CatchingUp:    catchingUp,
			AuthToken:     token,
			Hosts:         h.WebHosts(addr),
			Sessions:      sessions,
			AuditKey:      key,
			Logger:        logger.With("component", "web"),
			Teams:         c.teams,
			Forks:         forks,
		}),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	if err := home.WriteServeInfo(dir, home.ServeInfo{PID: os.Getpid(), URL: url}); err != nil {
		return fmt.Errorf("write serve info: %w", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	fmt.Fprintf(env.stdout, "crew is serving on %s (home %s, ready in %s)\n", url, dir, time.Since(start).Round(time.Millisecond))
	if left, catching := catchingUp(ctx); catching {
		fmt.Fprintf(env.stdout, "projections catching up: %d events left; messages are stored now and answered once they are done\n", left)
	}
	fmt.Fprintln(env.stdout, c.routes)
	if generated {
		fmt.Fprintln(env.stdout, h.LoginHint(addr, ln.Addr()))
	}
	if st.srv == nil {
		fmt.Fprintf(env.stdout, "event log on NATS %s: %s\n", events.RedactURL(h.Config.NATS.URL), st.replication(ctx))
	} else if url := st.srv.ClientURL(); url != "" {
		fmt.Fprintf(env.stdout, "embedded NATS is reachable at %s: nats --server %s stream info CREW\n", url, url)
	}
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}

// startTelegram starts the Telegram gateway for the master agent.
func startTelegram(ctx context.Context, token, dir string, h *home.Home, st *store, c *crewRuntime, logger *slog.Logger) (*telegram.Gateway, error) {
	master := h.Agents[home.MasterID]
	g, err := telegram.Start(ctx, telegram.Config{
		Token: token, APIURL: h.Config.Telegram.APIURL, AllowedChatIDs: master.Telegram.AllowedChatIDs,
		Workspace: filepath.Join(master.Dir, "workspace"), Log: st.log, Inbound: c.inbound, Approvals: c.approvals,
		Questions: c.questions, Outcome: c.questions.Outcome, Logger: logger.With("component", "telegram"), Home: dir, Artifact: c.canvas.File,
		NewConversation: func(ctx context.Context, channel string) (string, error) {
			id, err := c.inbound.Current(ctx, home.MasterID, channel)
			if err != nil {
				return "", err
			}
			return c.summaries.Close(ctx, id)
		},
		Status: func(context.Context) (running, queued, waiting []string, err error) {
			return projections.Overview(st.db)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	return g, nil
}
