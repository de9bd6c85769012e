package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Sync modes of the embedded store.
const (
	// SyncAlways fsyncs every append before it returns: an appended event
	// survives a power cut. The log fsyncs (one fsync per append, however
	// many events it holds and however many conversations append at that
	// moment, ADR 0008), not the server per message.
	SyncAlways = "always"
	// SyncInterval leaves fsync to the server's periodic flush (2 minutes):
	// an acknowledged event survives a process crash, not a power cut.
	SyncInterval = "interval"
)

// ServerConfig configures the embedded NATS server.
type ServerConfig struct {
	StoreDir string // JetStream store, <home>/data/nats
	Sync     string // SyncAlways (default) or SyncInterval
	// Listen, when set ("127.0.0.1:4222"), also accepts TCP clients such as
	// the nats CLI. Empty means in-process only.
	Listen string
	Logger *slog.Logger
}

// Server is an embedded nats-server with JetStream and one in-process
// client connection.
type Server struct {
	ns *server.Server
	nc *nats.Conn
	// fsync is the log's fsync with sync "always", nil with "interval".
	fsync *storeSync
}

// StartServer starts the embedded server and connects to it in-process.
func StartServer(cfg ServerConfig) (*Server, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("start nats: empty store dir")
	}
	opts := &server.Options{
		ServerName: "crew",
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		DontListen: cfg.Listen == "",
		NoSigs:     true,
		// One owner's events are small; cap a message well above any event.
		MaxPayload: 8 << 20,
	}
	// Readers and live feeds are consumers; a busy hour can hold more than
	// the server's default per-stream cap.
	opts.JetStreamLimits.DefaultMaxConsumers = -1
	var fsync *storeSync
	switch cfg.Sync {
	case "", SyncAlways:
		// The server writes each message as it stores it and syncs on its
		// interval; the Log fsyncs each append (OpenLog).
		fsync = newStoreSync(cfg.StoreDir)
	case SyncInterval:
	default:
		return nil, fmt.Errorf("start nats: sync %q: want %q or %q", cfg.Sync, SyncAlways, SyncInterval)
	}
	if cfg.Listen != "" {
		host, port, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("start nats: listen %q: %w", cfg.Listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return nil, fmt.Errorf("start nats: listen %q: bad port", cfg.Listen)
		}
		opts.Host, opts.Port = host, p
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start nats: %w", err)
	}
	if cfg.Logger != nil {
		ns.SetLoggerV2(slogAdapter{cfg.Logger}, false, false, false)
	}
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return nil, errors.New("start nats: server not ready after 30s")
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns), nats.Name("crew"), nats.MaxReconnects(-1))
	if err != nil {
		ns.Shutdown()
		return nil, fmt.Errorf("connect nats in-process: %w", err)
	}
	return &Server{ns: ns, nc: nc, fsync: fsync}, nil
}

// OpenLog opens the Log on this server's in-process connection (Open),
// durable as the server's sync mode says: with "always" every append is
// fsynced before it returns. A Log opened with Open on Conn has only the
// server's periodic sync.
func (s *Server) OpenLog(ctx context.Context, r *Redactor) (*Log, error) {
	l, err := Open(ctx, s.nc, r)
	if err != nil {
		return nil, err
	}
	l.fsync = s.fsync
	return l, nil
}

// Conn is the in-process client connection.
func (s *Server) Conn() *nats.Conn { return s.nc }

// Connect opens another in-process client connection (the caller closes
// it), as a second process would have its own.
func (s *Server) Connect() (*nats.Conn, error) {
	return nats.Connect("", nats.InProcessServer(s.ns), nats.Name("crew"))
}

// ClientURL is the TCP URL clients can use when Listen was set, else "".
func (s *Server) ClientURL() string {
	if s.ns.Addr() == nil {
		return ""
	}
	return s.ns.ClientURL()
}

// Close drains the client and shuts the server down, flushing the store.
func (s *Server) Close() error {
	err := s.nc.Drain()
	// Drain is asynchronous; wait for the connection to close.
	for i := 0; i < 200 && !s.nc.IsClosed(); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	if s.fsync != nil {
		s.fsync.close()
	}
	return err
}

// slogAdapter routes nats-server logs to slog.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Noticef(format string, v ...any) { a.l.Debug(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Warnf(format string, v ...any)   { a.l.Warn(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Fatalf(format string, v ...any)  { a.l.Error(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Errorf(format string, v ...any)  { a.l.Error(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Debugf(format string, v ...any)  { a.l.Debug(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Tracef(format string, v ...any)  {}
