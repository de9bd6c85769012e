package events

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// busyServer makes every write of the client wait as if the server's read
// loop were busy (answering a slow direct get): nats.go's flusher holds
// the connection's lock meanwhile.
type busyServer struct {
	nats.InProcessConnProvider
	busy *atomic.Int64 // nanoseconds each write waits
}

func (p busyServer) InProcessConn() (net.Conn, error) {
	c, err := p.InProcessConnProvider.InProcessConn()
	if err != nil {
		return nil, err
	}
	return slowWrites{c, p.busy}, nil
}

type slowWrites struct {
	net.Conn
	busy *atomic.Int64
}

func (s slowWrites) Write(p []byte) (int, error) {
	time.Sleep(time.Duration(s.busy.Load()))
	return s.Conn.Write(p)
}

// rawPipe is the server's own in-process connection, unbuffered.
type rawPipe struct{ ns *server.Server }

func (p rawPipe) InProcessConn() (net.Conn, error) { return p.ns.InProcessConn() }

// The condition that cut the crew's connection in a 10,000 burst, at
// small scale: the server's read loop is slow to take the client's writes
// (here each waits 600 ms, past the server's 300 ms write deadline) while
// the server pings the client and delivers to it. The client's reader
// needs the connection lock the blocked flusher holds to answer a PING;
// on a bare pipe the server's next write then waits on that reader until
// its deadline and the server closes the connection as a slow consumer.
// The crew's in-process connection buffers what the server writes, so
// the connection stays up and every message arrives.
func TestInProcessConnectionSurvivesABusyServerReadLoop(t *testing.T) {
	for _, tc := range []struct {
		name     string
		provider func(*server.Server) nats.InProcessConnProvider
		cut      bool
	}{
		{"crew", func(ns *server.Server) nats.InProcessConnProvider { return inProcess{ns} }, false},
		{"bare_pipe", func(ns *server.Server) nats.InProcessConnProvider { return rawPipe{ns} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, err := server.NewServer(&server.Options{ServerName: "busy", DontListen: true, NoSigs: true,
				WriteDeadline: 300 * time.Millisecond, PingInterval: 100 * time.Millisecond, MaxPingsOut: 1000})
			if err != nil {
				t.Fatal(err)
			}
			go ns.Start()
			if !ns.ReadyForConnections(10 * time.Second) {
				t.Fatal("server not ready")
			}
			t.Cleanup(ns.Shutdown)
			var cuts, busy atomic.Int64
			nc, err := nats.Connect("", nats.InProcessServer(busyServer{tc.provider(ns), &busy}),
				nats.MaxReconnects(0), nats.DisconnectErrHandler(func(*nats.Conn, error) { cuts.Add(1) }),
				nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nc.Close)
			var got atomic.Int64
			if _, err := nc.Subscribe("burst.>", func(*nats.Msg) { got.Add(1) }); err != nil {
				t.Fatal(err)
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			pub, err := nats.Connect("", nats.InProcessServer(inProcess{ns}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pub.Close)
			busy.Store(int64(600 * time.Millisecond))
			payload := make([]byte, 1024)
			done := make(chan struct{})
			writing := make(chan struct{})
			go func() { // keeps the client's flusher writing
				defer close(writing)
				for {
					select {
					case <-done:
						return
					default:
						nc.Publish("elsewhere", payload)
					}
				}
			}()
			t.Cleanup(func() { close(done); busy.Store(0); <-writing })
			const n = 40
			for range n {
				if err := pub.Publish("burst.x", payload); err != nil {
					t.Fatal(err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			deadline := time.Now().Add(20 * time.Second)
			for got.Load() < n && cuts.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if tc.cut {
				if cuts.Load() == 0 {
					t.Fatalf("the bare pipe was not cut (%d of %d delivered): the test no longer provokes the condition", got.Load(), n)
				}
				return
			}
			if cuts.Load() > 0 || got.Load() != n {
				t.Fatalf("connection cut %d times, %d of %d delivered", cuts.Load(), got.Load(), n)
			}
		})
	}
}
