// Package eventstest starts a real embedded JetStream for tests, like
// net/http/httptest: a store in t.TempDir(), no TCP listener, closed by
// t.Cleanup.
package eventstest

import (
	"testing"

	"github.com/my-agent-crew/crew/events"
)

// Option changes the server configuration of Start.
type Option func(*events.ServerConfig)

// WithStoreDir reuses a store directory (to test restarts).
func WithStoreDir(dir string) Option { return func(c *events.ServerConfig) { c.StoreDir = dir } }

// WithSync sets the sync mode (tests default to interval: faster, and a
// test process is not a power cut).
func WithSync(mode string) Option { return func(c *events.ServerConfig) { c.Sync = mode } }

// Start starts an embedded server and opens the log on it.
func Start(t testing.TB, opts ...Option) (*events.Server, *events.Log) {
	t.Helper()
	cfg := events.ServerConfig{StoreDir: t.TempDir(), Sync: events.SyncInterval}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := events.StartServer(cfg)
	if err != nil {
		t.Fatalf("start embedded nats: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	log, err := srv.OpenLog(t.Context(), nil)
	if err != nil {
		t.Fatalf("open log: %v", err)
	}
	return srv, log
}
