package app

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
	"github.com/my-agent-crew/crew/gateways/cluster"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/tools/script"
	"github.com/nats-io/nats.go"
	"go.etcd.io/bbolt"
)

// store is a home's event log and projections database, opened by exactly
// one process at a time (an flock on data/crew.lock). The log is the
// embedded server's, or an existing NATS cluster's (nats.url).
type store struct {
	dir  string
	lock *os.File
	srv  *events.Server // nil with nats.url
	nc   *nats.Conn     // appends, subscriptions, consumers
	rc   *nats.Conn     // the log's reads (direct gets), apart from nc
	log  *events.Log
	db   *bbolt.DB
	// leases is the cluster's lease bucket with nats.url (several crew
	// processes may share the cluster), nil on the embedded server.
	leases   *events.Leases
	scripts  *script.Store // the home's state beside the log, shared on a cluster
	sessions *web.Sessions
}

func dataDir(homeDir string) string { return filepath.Join(homeDir, "data") }

// openStore locks the home's data dir, starts the embedded NATS server on
// data/nats (or connects to nats.url) and opens data/projections.db.
func openStore(ctx context.Context, homeDir string, cfg *home.Config, secrets *events.Redactor, logger *slog.Logger) (*store, error) {
	dir := dataDir(homeDir)
	lock, err := home.LockData(homeDir)
	if err != nil {
		return nil, err
	}
	s := &store{dir: dir, lock: lock}
	if cfg.NATS.URL != "" {
		cc := cfg.NATS.Client()
		cc.Logger = logger
		if s.nc, err = events.Connect(cc); err == nil {
			cc.Name = "crew-reads"
			s.rc, err = events.Connect(cc)
		}
	} else {
		s.srv, err = events.StartServer(events.ServerConfig{
			StoreDir: filepath.Join(dir, "nats"),
			Sync:     cfg.NATS.Sync,
			Listen:   cfg.NATS.Listen,
			Logger:   logger, CollectWhenQuiet: true,
		})
		if err == nil {
			s.nc, s.rc = s.srv.Conn(), s.srv.ReadConn()
		}
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	if s.srv != nil {
		s.log, err = s.srv.OpenLog(ctx, secrets)
	} else {
		s.log, err = events.Open(ctx, s.nc, secrets)
		if err == nil {
			err = s.log.SetReader(s.rc)
		}
	}
	if err == nil { // the home's state beside the log (issue 30 item 4); an older home's files move in
		s.scripts, err = script.OpenStore(ctx, s.nc, homeDir, logger)
	}
	if err == nil {
		s.sessions, err = web.OpenSessions(ctx, s.nc, filepath.Join(dir, "web-sessions.json"), logger)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	cluster.TellReplicas(logger, s.log)
	if s.srv == nil {
		// Other homes may share the cluster: this one's consumers are its
		// own, named after its node id.
		node, err := home.NodeID(homeDir)
		if err == nil {
			s.log.SetNode(node)
			s.leases, err = events.OpenLeases(ctx, s.nc)
		}
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("nats.url %s: %w", events.RedactURL(cfg.NATS.URL), err)
		}
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
	} else {
		for _, nc := range []*nats.Conn{s.nc, s.rc} {
			if nc != nil {
				errs = append(errs, nc.Drain())
			}
		}
	}
	if s.lock != nil {
		os.Remove(filepath.Join(s.dir, "serve.json"))
		errs = append(errs, s.lock.Close())
	}
	return errors.Join(errs...)
}

// storeStats is /healthz's event_store: how many times each connection
// was lost and made again since start (each loss is logged at warn).
type storeStats struct {
	Reconnects     uint64 `json:"reconnects"`
	ReadReconnects uint64 `json:"read_reconnects"`
}

func (s *store) stats() storeStats {
	var st storeStats
	if s.nc != nil {
		st.Reconnects = s.nc.Stats().Reconnects
	}
	if s.rc != nil {
		st.ReadReconnects = s.rc.Stats().Reconnects
	}
	return st
}

// alive says whether the crew process holder still runs (cluster.Alive).
func (s *store) alive() func(ctx context.Context, holder string) (bool, error) {
	return cluster.Alive(s.leases)
}
