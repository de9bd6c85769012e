package main

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
)

// On a shared cluster every crew process's API acts on the same log, so a
// command of this process that reached a peer's HTTP port could approve
// its own pending calls there. Each process states its HTTP port in the
// lease http.<process id>; each guards (shell.GuardPorts) every peer's
// port it sees, those already there before its first command runs.

// httpKey is the lease key of a crew process's HTTP port.
func httpKey(id string) string { return "http." + id }

// announceHTTP holds the lease naming this process's HTTP port.
func (m *member) announceHTTP(ctx context.Context, ln net.Listener) (*events.Lease, error) {
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		return nil, err
	}
	return m.leases.Acquire(ctx, httpKey(m.id), port, clusterLeaseTTL)
}

// guardPeers calls guard with each peer's HTTP port as it appears; it
// returns once those already announced are guarded (or after wait), and
// keeps watching until ctx ends.
func guardPeers(ctx context.Context, leases *events.Leases, guard func(ports ...int) error, logger *slog.Logger, wait time.Duration) {
	seen := map[int]bool{}
	ready := make(chan struct{})
	go leases.Watch(ctx, "http.*", func(key, holder string) {
		p, err := strconv.Atoi(strings.TrimSpace(holder))
		if err != nil || p <= 0 || p >= 1<<16 || seen[p] {
			return
		}
		seen[p] = true
		if err := guard(p); err != nil {
			logger.Warn("shell commands with network are refused", "err", err)
		}
	}, func() { close(ready) })
	select {
	case <-ready:
	case <-ctx.Done():
	case <-time.After(wait):
		logger.Warn("the peers' HTTP ports were not all read in time; they are guarded as they come")
	}
}
