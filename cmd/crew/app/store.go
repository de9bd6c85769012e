package app

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/tools/script"
)

// store is the home's event store (events.Store, under the home's lock)
// with the home's state beside the log (issue 30 item 4), shared on a
// cluster: the scripts' stores and the web logins.
type store struct {
	*events.Store
	scripts  *script.Store
	sessions *web.Sessions
}

// openStore locks the home's data dir and opens its store as config.yaml
// says: the embedded server on data/nats, or nats.url.
func openStore(ctx context.Context, homeDir string, cfg *home.Config, secrets *events.Redactor, logger *slog.Logger) (*store, error) {
	lock, err := home.LockData(homeDir)
	if err != nil {
		return nil, err
	}
	var node string
	if cfg.NATS.URL != "" {
		if node, err = home.NodeID(homeDir); err != nil {
			lock.Close()
			return nil, fmt.Errorf("nats.url %s: %w", events.RedactURL(cfg.NATS.URL), err)
		}
	}
	dir := filepath.Join(homeDir, "data")
	es, err := events.OpenStore(ctx, events.StoreConfig{Dir: dir, Client: cfg.NATS.Client(), Node: node, Secrets: secrets, Lock: lock, Logger: logger,
		Server: events.ServerConfig{Sync: cfg.NATS.Sync, Listen: cfg.NATS.Listen, CollectWhenQuiet: true}})
	if err != nil {
		return nil, err
	}
	s := &store{Store: es}
	if s.scripts, err = script.OpenStore(ctx, es.Conn(), homeDir, logger); err == nil { // an older home's files move in
		s.sessions, err = web.OpenSessions(ctx, es.Conn(), filepath.Join(dir, "web-sessions.json"), logger)
	}
	if err != nil {
		es.Close()
		return nil, err
	}
	return s, nil
}
