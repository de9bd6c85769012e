package main

import (
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// R-ES-8 with the port guard: on a shared cluster a peer's API acts on the
// same log, so a command here that reached it could approve its own calls.
// A peer's announced HTTP port is guarded before guardPeers returns (before
// this process's first command), one announced later as it comes; a
// holder that is no port is ignored. (tools/shell
// TestPortGuardKeepsCommandsFromTheServer proves a guarded port refuses.)
func TestClusterPeersHTTPPortsGuarded(t *testing.T) {
	srv, _ := eventstest.Start(t)
	ctx := t.Context()
	ls, err := events.OpenLeases(ctx, srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer := &member{id: "peer-one", leases: ls}
	l, err := peer.announceHTTP(ctx, ln)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	junk, err := ls.Acquire(ctx, httpKey("junk"), "../7", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer junk.Release(ctx)
	var mu sync.Mutex
	var guarded []int
	guard := func(ports ...int) error {
		mu.Lock()
		defer mu.Unlock()
		guarded = append(guarded, ports...)
		return nil
	}
	has := func(p int) bool { mu.Lock(); defer mu.Unlock(); return slices.Contains(guarded, p) }
	guardPeers(ctx, ls, guard, slog.New(slog.DiscardHandler), 10*time.Second)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	first, _ := strconv.Atoi(port)
	if !has(first) {
		t.Fatalf("guarded %v before the first command, want the peer's port %d", guarded, first)
	}
	later, err := ls.Acquire(ctx, httpKey("peer-two"), "7431", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer later.Release(ctx)
	eventstest.Eventually(t, "a peer that joins later guarded", func() bool { return has(7431) })
	mu.Lock()
	defer mu.Unlock()
	if len(guarded) != 2 {
		t.Errorf("guarded %v, want only the two peers' ports", guarded)
	}
}
