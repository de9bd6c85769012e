package eventstest

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Cluster is n embedded NATS servers with JetStream clustered on loopback
// ports, each with its own store in t.TempDir(); closed by t.Cleanup.
type Cluster struct {
	t       testing.TB
	servers []*server.Server
	opts    []*server.Options
}

// ClusterOption changes the options of server i (0-based) before it
// starts.
type ClusterOption func(i int, o *server.Options)

// WithoutJetStream makes server i a plain NATS server of the cluster: it
// routes clients and counts as a server, but holds no replica.
func WithoutJetStream(i int) ClusterOption {
	return func(j int, o *server.Options) {
		if j == i {
			o.JetStream = false
		}
	}
}

// StartCluster starts an n-server JetStream cluster and waits until each
// accepts clients (a JetStream leader is elected a moment later; events.Open
// waits for it). Ports are picked free on loopback just before (racy in
// principle, as every such pick is).
func StartCluster(t testing.TB, n int, opts ...ClusterOption) *Cluster {
	t.Helper()
	c := &Cluster{t: t, servers: make([]*server.Server, n), opts: make([]*server.Options, n)}
	ports := freePorts(t, 2*n)
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[n+i]))
	}
	for i := range n {
		c.opts[i] = &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: ports[i],
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: "crew-test", Host: "127.0.0.1", Port: ports[n+i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
		}
		for _, o := range opts {
			o(i, c.opts[i])
		}
	}
	t.Cleanup(func() {
		for _, s := range c.servers {
			if s != nil {
				s.Shutdown()
				s.WaitForShutdown()
			}
		}
	})
	for i := range n {
		s, err := server.NewServer(c.opts[i])
		if err != nil {
			t.Fatalf("start nats %s: %v", c.opts[i].ServerName, err)
		}
		go s.Start()
		c.servers[i] = s
	}
	for i := range n {
		c.wait(i)
	}
	return c
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var out []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

func (c *Cluster) wait(i int) {
	c.t.Helper()
	if !c.servers[i].ReadyForConnections(30 * time.Second) {
		c.t.Fatalf("nats %s not ready after 30s", c.opts[i].ServerName)
	}
}

func (c *Cluster) start(i int) {
	c.t.Helper()
	s, err := server.NewServer(c.opts[i])
	if err != nil {
		c.t.Fatalf("start nats %s: %v", c.opts[i].ServerName, err)
	}
	go s.Start()
	c.servers[i] = s
	c.wait(i)
}

// URL lists every server's client URL, comma-separated (config.yaml
// nats.url).
func (c *Cluster) URL() string {
	var urls []string
	for _, o := range c.opts {
		urls = append(urls, "nats://127.0.0.1:"+strconv.Itoa(o.Port))
	}
	return strings.Join(urls, ",")
}

// Server returns server i (0-based), nil while it is down.
func (c *Cluster) Server(i int) *server.Server { return c.servers[i] }

// Kill stops server i at once, as a crash would leave the others.
func (c *Cluster) Kill(i int) {
	if s := c.servers[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.servers[i] = nil
	}
}

// Restart starts server i again on its store and ports.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	c.start(i)
}
