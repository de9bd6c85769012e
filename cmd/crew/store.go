package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"go.etcd.io/bbolt"
)

// store is a home's event log and projections database, opened by exactly
// one process at a time (an flock on data/crew.lock).
type store struct {
	dir  string
	lock *os.File
	srv  *events.Server
	log  *events.Log
	db   *bbolt.DB
}

func dataDir(homeDir string) string { return filepath.Join(homeDir, "data") }

// openStore locks the home's data dir, starts the embedded NATS server on
// data/nats and opens data/projections.db.
func openStore(ctx context.Context, homeDir string, cfg *home.Config, logger *slog.Logger) (*store, error) {
	dir := dataDir(homeDir)
	lock, err := home.LockData(homeDir)
	if err != nil {
		return nil, err
	}
	s := &store{dir: dir, lock: lock}
	s.srv, err = events.StartServer(events.ServerConfig{
		StoreDir: filepath.Join(dir, "nats"),
		Sync:     cfg.NATS.Sync,
		Listen:   cfg.NATS.Listen,
		Logger:   logger,
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	s.log, err = events.Open(ctx, s.srv.Conn())
	if err != nil {
		s.Close()
		return nil, err
	}
	s.db, err = bbolt.Open(filepath.Join(dir, "projections.db"), 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("open projections db: %w", err)
	}
	return s, nil
}

// Close closes what was opened, in reverse order.
func (s *store) Close() error {
	var errs []error
	if s.db != nil {
		errs = append(errs, s.db.Close())
	}
	if s.srv != nil {
		errs = append(errs, s.srv.Close())
	}
	if s.lock != nil {
		os.Remove(filepath.Join(s.dir, "serve.json"))
		errs = append(errs, s.lock.Close())
	}
	return errors.Join(errs...)
}
