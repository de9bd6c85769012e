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
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.etcd.io/bbolt"
)

// store is a home's event log and projections database, opened by exactly
// one process at a time (an flock on data/crew.lock). The log is the
// embedded server's, or an existing NATS cluster's (nats.url).
type store struct {
	dir  string
	lock *os.File
	srv  *events.Server // nil with nats.url
	nc   *nats.Conn
	log  *events.Log
	db   *bbolt.DB
}

func dataDir(homeDir string) string { return filepath.Join(homeDir, "data") }

// openStore locks the home's data dir, starts the embedded NATS server on
// data/nats (or connects to nats.url) and opens data/projections.db.
func openStore(ctx context.Context, homeDir string, cfg *home.Config, logger *slog.Logger) (*store, error) {
	dir := dataDir(homeDir)
	lock, err := home.LockData(homeDir)
	if err != nil {
		return nil, err
	}
	s := &store{dir: dir, lock: lock}
	if cfg.NATS.URL != "" {
		s.nc, err = events.Connect(events.ClientConfig{URL: cfg.NATS.URL, Creds: cfg.NATS.Creds,
			TLSCA: cfg.NATS.TLSCA, TLSCert: cfg.NATS.TLSCert, TLSKey: cfg.NATS.TLSKey})
	} else {
		s.srv, err = events.StartServer(events.ServerConfig{
			StoreDir: filepath.Join(dir, "nats"),
			Sync:     cfg.NATS.Sync,
			Listen:   cfg.NATS.Listen,
			Logger:   logger,
		})
		if err == nil {
			s.nc = s.srv.Conn()
		}
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	s.log, err = events.Open(ctx, s.nc)
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
	} else if s.nc != nil {
		errs = append(errs, s.nc.Drain())
	}
	if s.lock != nil {
		os.Remove(filepath.Join(s.dir, "serve.json"))
		errs = append(errs, s.lock.Close())
	}
	return errors.Join(errs...)
}

// replication says how the log is kept on an external cluster: servers
// known, the stream's replicas and which of them are current.
func (s *store) replication(ctx context.Context) string {
	return replication(ctx, s.nc)
}

// clusterReport connects to nats.url on its own (the server may hold the
// home) and reports the replication, read only.
func clusterReport(ctx context.Context, cfg *home.Config) string {
	nc, err := events.Connect(events.ClientConfig{URL: cfg.NATS.URL, Creds: cfg.NATS.Creds,
		TLSCA: cfg.NATS.TLSCA, TLSCert: cfg.NATS.TLSCert, TLSKey: cfg.NATS.TLSKey})
	if err != nil {
		return err.Error()
	}
	defer nc.Close()
	return replication(ctx, nc)
}

func replication(ctx context.Context, nc *nats.Conn) string {
	js, err := jetstream.New(nc)
	if err != nil {
		return err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, events.StreamName)
	if err != nil {
		return fmt.Sprintf("cluster %q of %d servers, stream %s: %v", nc.ConnectedClusterName(), events.ClusterSize(nc), events.StreamName, err)
	}
	si := stream.CachedInfo()
	line := fmt.Sprintf("cluster %q of %d servers, stream %s with %d replicas", nc.ConnectedClusterName(), events.ClusterSize(nc), events.StreamName, si.Config.Replicas)
	if c := si.Cluster; c != nil && c.Leader != "" {
		line += " (leader " + c.Leader
		for _, r := range c.Replicas {
			state := "current"
			if !r.Current {
				state = "behind"
			}
			if r.Offline {
				state = "offline"
			}
			line += ", " + r.Name + " " + state
		}
		line += ")"
	}
	return line
}

// clusterLeaseTTL is how long a dead crew process keeps the cluster.
const clusterLeaseTTL = 10 * time.Second

// holdCluster takes the cluster's "serve" lease: this build runs one crew
// process per cluster (its projections' and turns' consumers are the
// stream's, not the process's), so a second one is refused, naming the
// first. The returned context ends if the lease is lost (the process
// must stop); stop releases it.
func holdCluster(ctx context.Context, st *store, dir string, h *home.Home, logger *slog.Logger) (context.Context, context.CancelFunc, error) {
	host, _ := os.Hostname()
	owner := fmt.Sprintf("crew serve pid %d on %s (home %s)", os.Getpid(), host, dir)
	lease, err := events.AcquireLease(ctx, st.nc, "serve", owner, clusterLeaseTTL)
	if held := (*events.HeldError)(nil); errors.As(err, &held) {
		return nil, nil, fmt.Errorf("nats.url %s: the cluster is in use by %s; this build runs one crew process per cluster", events.RedactURL(h.Config.NATS.URL), held.Holder)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("nats.url %s: %w", events.RedactURL(h.Config.NATS.URL), err)
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-lease.Lost():
			logger.Error("lost the cluster's serve lease (the cluster was unreachable for its whole TTL): stopping")
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel()
		if err := lease.Release(context.Background()); err != nil {
			logger.Warn("cluster lease not released; it expires by itself", "err", err)
		}
	}, nil
}
