package shell

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/my-agent-crew/crew/tools/web/wall"
)

// A command with network (no Sandbox, or Sandbox.Network) runs in a
// network namespace of its own like every other; its only way out is the
// crew's proxy (wall.Proxy), which the caller of Run serves on a socket
// listening at ProxyAddr inside that namespace. The command finds it in
// HTTP_PROXY, HTTPS_PROXY and ALL_PROXY (and their lower-case forms); the
// proxy connects only to public addresses, on the ports and hosts of the
// Sandbox's Network (New). Loopback, private and link-local
// addresses, the cloud metadata service, the server's own API, its MCP servers and
// any other host's services are not in the namespace at all: a program
// that ignores the proxy gets "network is unreachable" or "connection
// refused", never a way around it.

// ProxyAddr is where a networked command finds the proxy, inside its own
// network namespace.
const ProxyAddr = "127.0.0.1:3128"

// DefaultPorts are the ports the proxy connects to when shell_ports is
// not set.
var DefaultPorts = []int{80, 443}

// Network is what a command with network reaches through the proxy:
// public addresses only, on Ports, of Hosts.
type Network struct {
	Ports []int    // shell_ports; empty: DefaultPorts
	Hosts []string // shell_hosts: host patterns (wall.MatchHost); empty: any public host
}

// netPolicy is the Network in force, with its wall.
type netPolicy struct {
	Network
	wall *wall.Wall
}

// Network is the policy of s's commands with network.
func (s *Sandbox) Network() Network {
	return Network{Ports: slices.Clone(s.net.Ports), Hosts: slices.Clone(s.net.Hosts)}
}

func newNetPolicy(n Network) (*netPolicy, error) {
	if len(n.Ports) == 0 {
		n.Ports = DefaultPorts
	}
	var ports []uint16
	for _, p := range n.Ports {
		if p < 1 || p > 65535 {
			return nil, fmt.Errorf("shell_ports: port must be 1..65535, got %d", p)
		}
		ports = append(ports, uint16(p))
	}
	for _, h := range n.Hosts {
		if err := wall.CheckHostPattern(h); err != nil {
			return nil, fmt.Errorf("shell_hosts: %w", err)
		}
	}
	w := wall.New(wall.WithPorts(ports...))
	n.Ports = nil
	for _, p := range w.PortList() {
		n.Ports = append(n.Ports, int(p))
	}
	n.Hosts = slices.Clone(n.Hosts)
	return &netPolicy{Network: n, wall: w}, nil
}

// proxy is the proxy of one command under p.
func (p *netPolicy) proxy(refused func(host string, err error)) *wall.Proxy {
	var allow func(string) error
	if len(p.Hosts) > 0 {
		allow = func(host string) error {
			if wall.MatchHost(p.Hosts, host) {
				return nil
			}
			return &wall.Refusal{Addr: host, Reason: "is not in shell_hosts", Rule: "only " + strings.Join(p.Hosts, ", ") + " are reached"}
		}
	}
	return wall.NewProxy(p.wall, allow, refused)
}

// Describe says what a command with network reaches (crew doctor).
func (n Network) Describe() string {
	if len(n.Ports) == 0 {
		n.Ports = DefaultPorts
	}
	ps := make([]string, len(n.Ports))
	for i, p := range n.Ports {
		ps[i] = strconv.Itoa(p)
	}
	hosts := "any public host"
	if len(n.Hosts) > 0 {
		hosts = "only " + strings.Join(n.Hosts, ", ") + " (shell_hosts)"
	}
	return fmt.Sprintf("public addresses on ports %s (shell_ports), %s", strings.Join(ps, ", "), hosts)
}

// proxyEnv sets the proxy variables in env: every spelling a tool reads,
// and NO_PROXY for the namespace's own loopback (a server the command
// starts itself).
func proxyEnv(env []string) []string {
	url := "http://" + ProxyAddr
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		env = setEnv(env, k, url)
	}
	for _, k := range []string{"NO_PROXY", "no_proxy"} {
		env = setEnv(env, k, "localhost,127.0.0.1,::1")
	}
	return env
}

// maxRefusals is how many refusals a command's Output keeps.
const maxRefusals = 10

// refusals collects what one command's proxy refused, each once.
type refusals struct {
	mu   sync.Mutex
	msgs []string
}

func (r *refusals) add(host string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := err.Error()
	if slices.Contains(r.msgs, msg) {
		return
	}
	r.msgs = append(r.msgs, msg)
	if len(r.msgs) > maxRefusals {
		r.msgs = r.msgs[len(r.msgs)-maxRefusals:]
	}
}

func (r *refusals) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}
