package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
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
	// CollectWhenQuiet collects garbage at quiet moments (no collection
	// of the runtime's own for 2 s; three in a row at most) and hands the
	// pages back. The file store keeps a block it read (8 MB) for 10 s,
	// then its buffer goes to a pool that lets it go only two collections
	// later, and an idle process collects every 2 minutes: 16 MB stayed
	// resident for minutes after a read (docs/performance.md, "Memory").
	CollectWhenQuiet bool
}

// Server is an embedded nats-server with JetStream and two in-process
// client connections: one for reads, one for the rest.
type Server struct {
	ns *server.Server
	nc *nats.Conn // appends, subscriptions, consumers
	rc *nats.Conn // reads
	// fsync is the log's fsync with sync "always", nil with "interval".
	fsync *storeSync
	// streams are the fsyncs of the other streams StreamSync was asked
	// for (with "always"), by name, under the store at storeDir.
	storeDir string
	syncMu   sync.Mutex
	streams  map[string]*storeSync
	// quiet stops the collector of CollectWhenQuiet; wg waits for it.
	quiet chan struct{}
	wg    sync.WaitGroup
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
	s := &Server{ns: ns, fsync: fsync, storeDir: cfg.StoreDir}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if s.nc, err = s.connect("crew", logger); err == nil {
		s.rc, err = s.connect("crew-reads", logger)
	}
	if err != nil {
		if s.nc != nil {
			s.nc.Close()
		}
		ns.Shutdown()
		return nil, fmt.Errorf("connect nats in-process: %w", err)
	}
	if cfg.CollectWhenQuiet {
		s.quiet = make(chan struct{})
		s.wg.Add(1)
		go collectWhenQuiet(s.quiet, &s.wg)
	}
	return s, nil
}

// OpenLog opens the Log on this server's in-process connections (Open,
// its reads on ReadConn), durable as the server's sync mode says: with
// "always" every append is fsynced before it returns. A Log opened with
// Open on Conn has only the server's periodic sync.
func (s *Server) OpenLog(ctx context.Context, r *Redactor) (*Log, error) {
	l, err := Open(ctx, s.nc, r)
	if err != nil {
		return nil, err
	}
	if err := l.SetReader(s.rc); err != nil {
		return nil, err
	}
	l.fsync, l.embedded = s.fsync, true
	return l, nil
}

// connect opens a reconnecting in-process connection named name whose
// losses are logged at warn with the server's reason.
func (s *Server) connect(name string, logger *slog.Logger) (*nats.Conn, error) {
	opts := append(ConnectionEvents(logger, name, s.closedReason),
		nats.InProcessServer(inProcess{s.ns}), nats.Name(name),
		nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	return nats.Connect("", opts...)
}

// closedReason is why the server closed the connection cid ("" when it
// has no record of it yet).
func (s *Server) closedReason(cid uint64) string {
	cz, err := s.ns.Connz(&server.ConnzOptions{CID: cid, State: server.ConnClosed})
	if err != nil || len(cz.Conns) == 0 {
		return ""
	}
	return cz.Conns[0].Reason
}

// ConnectionEvents are the options that log at warn each loss of a
// connection to the event store (with reason's answer for its client id,
// when reason is set) and each reconnection; the connection reconnects
// on its own and nats.go's default handler would print to stderr.
func ConnectionEvents(logger *slog.Logger, name string, reason func(cid uint64) string) []nats.Option {
	return []nats.Option{
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err == nil {
				return // closed by us
			}
			cid, _ := nc.GetClientID()
			if reason == nil {
				logger.Warn("lost the connection to the event store; reconnecting", "connection", name, "client_id", cid, "err", err)
				return
			}
			go func() {
				// The server records the closed connection once its
				// write loop has finished with it.
				why := ""
				for range 20 {
					if why = reason(cid); why != "" {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				logger.Warn("lost the connection to the event store; reconnecting", "connection", name, "client_id", cid, "err", err, "reason", why)
			}()
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			logger.Warn("reconnected to the event store", "connection", name, "reconnects", nc.Stats().Reconnects)
		}),
		nats.ErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			logger.Warn("event store connection error", "connection", name, "subject", subject, "err", err)
		}),
	}
}

// Disconnect closes the server's side of nc's connection, as the server
// does to a slow consumer; nc reconnects on its own. What survives a cut
// is tested with it.
func (s *Server) Disconnect(nc *nats.Conn) error {
	cid, err := nc.GetClientID()
	if err != nil {
		return err
	}
	return s.ns.DisconnectClientByID(cid)
}

// Conn is the in-process client connection appends, subscriptions and
// consumers use.
func (s *Server) Conn() *nats.Conn { return s.nc }

// ReadConn is the in-process connection for reads (direct gets): the
// server answers a direct get inline in the asking connection's read
// loop, so a slow one there would hold up every append behind it.
func (s *Server) ReadConn() *nats.Conn { return s.rc }

// Connect opens another in-process client connection (the caller closes
// it), as a second process would have its own.
func (s *Server) Connect() (*nats.Conn, error) {
	return nats.Connect("", nats.InProcessServer(inProcess{s.ns}), nats.Name("crew"))
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
	if s.quiet != nil {
		close(s.quiet)
		s.wg.Wait()
		s.quiet = nil
	}
	err := errors.Join(s.nc.Drain(), s.rc.Drain())
	// Drain is asynchronous; wait for the connections to close.
	for i := 0; i < 200 && !(s.nc.IsClosed() && s.rc.IsClosed()); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	if s.fsync != nil {
		s.fsync.close()
	}
	s.syncMu.Lock()
	for _, ss := range s.streams {
		ss.close()
	}
	s.syncMu.Unlock()
	return err
}

// StreamSync is what makes the writes to stream (a bucket's or an object
// store's beside the log, such as ObjectsStream(SpillBucket)) as durable
// as the log's with sync "always": it returns once every message stored
// on stream before it was called is on disk (one fsync serving every
// caller at that moment, as for the log: ADR 0008). nil with "interval",
// where the server's periodic sync serves them all, and of a nil Server
// (nats.url: the cluster's servers sync as they are set to).
func (s *Server) StreamSync(stream string) func() error {
	if s == nil || s.fsync == nil { // a cluster's (no server of ours), or "interval"
		return nil
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.streams == nil {
		s.streams = map[string]*storeSync{}
	}
	ss := s.streams[stream]
	if ss == nil {
		ss = newStreamSync(s.storeDir, stream)
		s.streams[stream] = ss
	}
	return ss.Sync
}

// slogAdapter routes nats-server logs to slog.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Noticef(format string, v ...any) { a.l.Debug(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Warnf(format string, v ...any)   { a.l.Warn(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Fatalf(format string, v ...any)  { a.l.Error(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Errorf(format string, v ...any)  { a.l.Error(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Debugf(format string, v ...any)  { a.l.Debug(fmt.Sprintf(format, v...)) }
func (a slogAdapter) Tracef(format string, v ...any)  {}
