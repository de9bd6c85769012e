package events

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"go.etcd.io/bbolt"
)

// StoreConfig says where a home's event log is: on the embedded server
// (Server), or on an existing NATS server or cluster when Client.URL is
// set.
type StoreConfig struct {
	// Dir is the home's data folder: the embedded server's files (nats/,
	// Server.StoreDir) and the projections database (projections.db).
	Dir    string
	Server ServerConfig
	Client ClientConfig
	// Node names this home's consumers with Client.URL: other homes may
	// share the cluster.
	Node    string
	Secrets *Redactor
	// Lock keeps other processes out of the store (the home's flock);
	// Close closes it last, as does an OpenStore that fails.
	Lock io.Closer
	// Logger is told of the connections' losses, the embedded server's
	// lines and a raise of the stream's replicas; nil discards them.
	Logger *slog.Logger
}

// Store is a home's event log and, beside it, the projections database,
// opened by one process at a time (StoreConfig.Lock).
type Store struct {
	lock   io.Closer
	srv    *Server    // nil with Client.URL
	nc     *nats.Conn // appends, subscriptions, consumers
	rc     *nats.Conn // the log's reads (direct gets), apart from nc
	log    *Log
	leases *Leases
	db     *bbolt.DB
}

// OpenStore starts the embedded server on Dir/nats (or connects twice to
// Client.URL: one connection for the log's reads), opens the log with
// Secrets (telling what opening it did to the stream's replicas), on a
// cluster the lease bucket, and Dir/projections.db.
func OpenStore(ctx context.Context, cfg StoreConfig) (_ *Store, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{lock: cfg.Lock}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if cfg.Client.URL != "" {
		cc := cfg.Client
		cc.Logger = cfg.Logger
		if s.nc, err = Connect(cc); err == nil {
			cc.Name = "crew-reads"
			s.rc, err = Connect(cc)
		}
		if err == nil {
			s.log, err = Open(ctx, s.nc, cfg.Secrets)
		}
		if err == nil {
			err = s.log.SetReader(s.rc)
		}
	} else {
		sc := cfg.Server
		sc.StoreDir, sc.Logger = filepath.Join(cfg.Dir, "nats"), cfg.Logger
		if s.srv, err = StartServer(sc); err == nil {
			s.nc, s.rc = s.srv.Conn(), s.srv.ReadConn()
			s.log, err = s.srv.OpenLog(ctx, cfg.Secrets)
		}
	}
	if err != nil {
		return nil, err
	}
	s.log.TellReplicas(cfg.Logger)
	if s.srv == nil {
		s.log.SetNode(cfg.Node)
		if s.leases, err = OpenLeases(ctx, s.nc); err != nil {
			return nil, fmt.Errorf("nats.url %s: %w", RedactURL(cfg.Client.URL), err)
		}
	}
	if s.db, err = bbolt.Open(filepath.Join(cfg.Dir, "projections.db"), 0o600, &bbolt.Options{Timeout: 5 * time.Second}); err != nil {
		return nil, fmt.Errorf("open projections db: %w", err)
	}
	return s, nil
}

// Log is the event log (nil of a nil Store: a command that opens none).
func (s *Store) Log() *Log {
	if s == nil {
		return nil
	}
	return s.log
}

// DB is the projections database (nil of a nil Store).
func (s *Store) DB() *bbolt.DB {
	if s == nil {
		return nil
	}
	return s.db
}

// Conn is the connection appends, subscriptions and consumers use (nil
// of a nil Store).
func (s *Store) Conn() *nats.Conn {
	if s == nil {
		return nil
	}
	return s.nc
}

// Server is the embedded server, nil on a cluster (Client.URL).
func (s *Store) Server() *Server { return s.srv }

// Leases is the cluster's lease bucket (several crew processes may share
// the cluster), nil on the embedded server.
func (s *Store) Leases() *Leases { return s.leases }

// Close closes what was opened, in reverse order, the lock last.
func (s *Store) Close() error {
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
		errs = append(errs, s.lock.Close())
	}
	return errors.Join(errs...)
}

// StoreStats is /healthz's event_store: how many times each connection
// was lost and made again since start (each loss is logged at warn).
type StoreStats struct {
	Reconnects     uint64 `json:"reconnects"`
	ReadReconnects uint64 `json:"read_reconnects"`
}

// Stats counts the connections' reconnects.
func (s *Store) Stats() StoreStats {
	var st StoreStats
	if s.nc != nil {
		st.Reconnects = s.nc.Stats().Reconnects
	}
	if s.rc != nil {
		st.ReadReconnects = s.rc.Stats().Reconnects
	}
	return st
}

// TellReplicas logs what opening l did to the stream's replicas: a raise
// at info, a stream left short of 3 on a cluster of enough servers at
// warn (R-ES-8).
func (l *Log) TellReplicas(logger *slog.Logger) {
	if r := l.Raised(); r != nil {
		logger.Info("raised the event stream's replicas: the cluster can place them", "stream", StreamName, "from", r.From, "to", r.To, "servers", r.Servers)
	}
	if have, servers := l.Short(); have > 0 {
		logger.Warn("the event stream stays short of its replicas: the cluster could not place them now (a server down, or short of room); tried again at the next start",
			"stream", StreamName, "replicas", have, "want", ClusterReplicas, "servers", servers)
	}
}
