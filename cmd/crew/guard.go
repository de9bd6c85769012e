package main

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/my-agent-crew/crew/cmd/crew/home"
)

// guardedPorts are the ports an agent's shell must not connect to
// (shell.GuardPorts): the web API, which trusts loopback, the embedded
// NATS listener, and the port of every NATS URL in config.yaml (a local
// server there would take the agent's publishes as the crew's).
func guardedPorts(ln net.Listener, st *store, h *home.Home) []int {
	var ports []int
	add := func(hostport string) {
		if _, p, err := net.SplitHostPort(hostport); err == nil {
			if n, err := strconv.Atoi(p); err == nil {
				ports = append(ports, n)
			}
		}
	}
	add(ln.Addr().String())
	if st.srv != nil {
		if u, err := url.Parse(st.srv.ClientURL()); err == nil && u.Host != "" {
			add(u.Host)
		}
	}
	add(h.Config.NATS.Listen)
	for _, raw := range strings.Split(h.Config.NATS.URL, ",") {
		if u, err := url.Parse(strings.TrimSpace(raw)); err == nil && u.Host != "" {
			if u.Port() == "" {
				ports = append(ports, 4222)
			} else {
				add(u.Host)
			}
		}
	}
	return ports
}
