package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/app"
	"github.com/my-agent-crew/crew/cmd/crew/faults"
	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/gateways/web"
)

func runServe(ctx context.Context, env *cliEnv, args []string) error {
	fs, homeFlag := newFlags(env, "serve")
	listen := fs.String("listen", "", "HTTP address (default config.yaml listen, else 127.0.0.1:7420); non-loopback needs an auth token, generated into <home>/env if none is set")
	if err := parse(env, fs, args); err != nil {
		return err
	}
	dir, h, err := serveHome(env, *homeFlag)
	if err != nil {
		return err
	}
	start := time.Now()
	addr := cmp.Or(*listen, h.Config.Listen)
	wc, generated, err := serveSecrets(env, h, addr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(env.redactor().Writer(env.stderr), &slog.HandlerOptions{Level: slog.LevelInfo}))
	a, err := app.Open(ctx, dir, h, options(env, "serve", app.Options{Serve: true, Listen: addr, Logger: logger, MemoryLimit: h.Config.MemoryLimit(env.getenv)}))
	if info, ierr := home.ReadServeInfo(dir); errors.Is(err, home.ErrStoreBusy) && ierr == nil {
		return fmt.Errorf("%w (pid %d, %s)", err, info.PID, info.URL)
	}
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.RunSingletons(ctx, h.Getenv("TELEGRAM_BOT_TOKEN", env.getenv), env.stdout); err != nil {
		return err
	}
	// Model clients and the Telegram gateway hold their keys now.
	home.DropSecretEnv(env.environ, env.unsetenv)
	wc.Hosts, wc.Logger = h.WebHosts(addr), logger.With("component", "web")
	srv := &http.Server{Handler: web.New(a.Web(wc)), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	url := home.ReachableURL(a.Listener.Addr())
	if err := home.WriteServeInfo(dir, home.ServeInfo{PID: os.Getpid(), URL: url, Listen: a.Listener.Addr().String()}); err != nil {
		return fmt.Errorf("write serve info: %w", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(a.Listener) }()
	announce(ctx, env, a, url, time.Since(start), generated, addr)
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	case <-a.Lost():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}

// serveHome is the home serve runs, created with a working master agent
// when there is none.
func serveHome(env *cliEnv, flagValue string) (string, *home.Home, error) {
	dir, err := homeDir(env, flagValue)
	if err != nil {
		return "", nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "config.yaml")); errors.Is(err, os.ErrNotExist) {
		if _, err := home.Init(dir); err != nil {
			return "", nil, err
		}
		fmt.Fprintf(env.stdout, "created home at %s\n", dir)
	}
	h, err := loadHome(env, dir)
	return dir, h, err
}

// serveSecrets are written to <home>/env before anything reads it: the
// audit key, and the auth token a non-loopback address needs (generated
// says serve made it). The token, however it was set or made, is never
// written down.
func serveSecrets(env *cliEnv, h *home.Home, addr string) (wc web.Config, generated bool, err error) {
	if wc.AuditKey, err = h.AuditKey(env.redactor(), env.getenv); err != nil {
		return wc, false, err
	}
	wc.AuthToken, generated, err = h.ServeAuth(env.redactor(), addr, env.getenv)
	return wc, generated, err
}

// announce prints where the crew serves and what runs it.
func announce(ctx context.Context, env *cliEnv, a *app.App, url string, took time.Duration, generated bool, addr string) {
	fmt.Fprintf(env.stdout, "crew is serving on %s (home %s, ready in %s)\n", url, a.Dir, took.Round(time.Millisecond))
	if left, catching := a.CatchingUp(ctx); catching {
		fmt.Fprintf(env.stdout, "projections catching up: %d events left; messages are stored now and answered once they are done\n", left)
	}
	fmt.Fprintln(env.stdout, a.Routes)
	if generated {
		fmt.Fprintln(env.stdout, a.Home.LoginHint(addr, a.Listener.Addr()))
	}
	_, source := a.Home.AuthToken(env.getenv)
	fmt.Fprintf(env.stdout, "MCP: %s/mcp (Authorization: Bearer <the auth token: %s>), or crew mcp serve on stdio\n", url, source)
	if d := a.Describe(ctx); d != "" {
		fmt.Fprintln(env.stdout, d)
	}
}

// options are the App's options for a command of this process: its
// environment, and the test build's seams (the crash point, the held
// projections).
func options(env *cliEnv, as string, o app.Options) app.Options {
	o.As, o.Getenv, o.Secrets = as, env.getenv, env.redactor()
	faults.Apply(&o)
	return o
}
