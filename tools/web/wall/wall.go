// Package wall is the crew's one guarded dialer (R-SEC-2): every outbound
// connection a tool makes — fetch_url, a fetched search result, every
// request of the browser's pages through its proxy, every connection of a
// shell command with network through its proxy (Proxy) — is dialled here,
// and only a public address on port 80 or 443 (for shell commands, the
// owner's shell_ports: WithPorts) is connected.
//
// The check runs in net.Dialer.Control, on the address actually being
// connected after the name was resolved, for every address tried and on
// every redirect, so a name that resolves to a private address (DNS
// rebinding) or a redirect to loopback is refused before connect(2): no
// packet leaves. Refused: loopback, private (RFC 1918, ULA), link-local
// (and so the metadata services 169.254.169.254 and fd00:ec2::254),
// CGNAT, multicast, unspecified, reserved and documentation ranges, and
// IPv4-mapped forms of any of them (code.dny.dev/ssrf keeps the IANA
// special-purpose lists).
//
// There is no setting that turns the wall off or admits a non-public
// address. Only a binary
// built with the crewtest tag (the end-to-end tests') admits the exact
// host:port pairs listed in CREW_TEST_ALLOW_ADDRS (allow_crewtest.go); a
// normal build has no such code.
package wall

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// Ports are the only ports the wall connects to, unless WithPorts says
// otherwise.
var Ports = []uint16{80, 443}

// testAllow is the crewtest build's admission set; nil in every other
// build.
var testAllow map[netip.AddrPort]bool

// ErrRefused is what every refusal wraps (errors.Is).
var ErrRefused = errors.New("refused by the crew's network wall")

// Refusal says which address was refused and why.
type Refusal struct {
	Host   string // what was asked for (a name or an IP), when known
	Addr   string // the address that would have been connected
	Reason string
	// Rule is what is reached instead; empty: public addresses on the
	// wall's ports.
	Rule  string
	ports []uint16
}

func (r *Refusal) Error() string {
	rule := r.Rule
	if rule == "" {
		rule = "only public addresses on " + portsText(r.ports) + " are reached"
	}
	if r.Host != "" && r.Host != r.Addr && !strings.HasPrefix(r.Addr, r.Host+":") && !strings.HasPrefix(r.Addr, "["+r.Host+"]") {
		return fmt.Sprintf("%v: %s (%s) %s; %s", ErrRefused, r.Host, r.Addr, r.Reason, rule)
	}
	return fmt.Sprintf("%v: %s %s; %s", ErrRefused, r.Addr, r.Reason, rule)
}

// portsText is "ports 80 and 443" for ports (Ports when nil).
func portsText(ports []uint16) string {
	if ports == nil {
		ports = Ports
	}
	if len(ports) == 1 {
		return fmt.Sprintf("port %d", ports[0])
	}
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(int(p))
	}
	return "ports " + strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func (r *Refusal) Unwrap() error { return ErrRefused }

// Resolver looks names up; *net.Resolver is one. Tests give a map so they
// never ask real DNS; whatever it answers is checked like any address.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Wall dials only public addresses.
type Wall struct {
	guard    *ssrf.Guardian
	ports    []uint16
	resolver Resolver
	timeout  time.Duration
}

// Option changes a Wall. None of them admits a non-public address.
type Option func(*Wall)

// WithResolver replaces the system resolver (tests: a fixed map).
func WithResolver(r Resolver) Option { return func(w *Wall) { w.resolver = r } }

// WithPorts replaces the ports connected to (Ports): the owner's
// shell_ports for shell commands. No port at all keeps Ports.
func WithPorts(ports ...uint16) Option {
	return func(w *Wall) {
		if len(ports) > 0 {
			w.ports = slices.Sorted(slices.Values(slices.Clone(ports)))
			w.ports = slices.Compact(w.ports)
		}
	}
}

// New returns the wall.
func New(opts ...Option) *Wall {
	w := &Wall{ports: Ports, resolver: net.DefaultResolver, timeout: 10 * time.Second}
	for _, o := range opts {
		o(w)
	}
	w.guard = ssrf.New(ssrf.WithPorts(w.ports...))
	return w
}

// PortList is the ports the wall connects to.
func (w *Wall) PortList() []uint16 { return slices.Clone(w.ports) }

// CheckAddr reports why the wall refuses to connect to ap, or nil.
func (w *Wall) CheckAddr(ap netip.AddrPort) error {
	if testAllow[ap] { // the crewtest build's exact pairs; empty otherwise
		return nil
	}
	// The address first, so a refusal names its class whatever the port.
	err := w.guard.SafeAddr(ap.Addr())
	if err == nil {
		err = w.guard.SafeAddrPort(ap)
	}
	if err != nil {
		return &Refusal{Addr: ap.String(), Reason: reason(ap, err), ports: w.ports}
	}
	return nil
}

// reason names the class of a refused address for the model and the owner.
func reason(ap netip.AddrPort, err error) string {
	if errors.Is(err, ssrf.ErrProhibitedPort) {
		return fmt.Sprintf("is on port %d", ap.Port())
	}
	a := ap.Addr()
	mapped := ""
	if a.Is4In6() {
		mapped, a = "an IPv4-mapped form of ", a.Unmap()
	}
	metadata := netip.MustParseAddr("169.254.169.254")
	switch {
	case a == metadata || a == netip.MustParseAddr("fd00:ec2::254"):
		return "is " + mapped + "a cloud metadata address"
	case a.IsLoopback():
		return "is " + mapped + "a loopback address"
	case a.IsUnspecified():
		return "is " + mapped + "the unspecified address"
	case a.IsPrivate():
		return "is " + mapped + "a private address"
	case a.IsLinkLocalUnicast():
		return "is " + mapped + "a link-local address"
	case a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast():
		return "is " + mapped + "a multicast address"
	case a.Is4() && netip.MustParsePrefix("100.64.0.0/10").Contains(a):
		return "is " + mapped + "a shared (CGNAT) address"
	}
	return "is " + mapped + "not a public address"
}

// control is the net.Dialer hook: it sees the address being connected.
func (w *Wall) control(network, address string, _ syscall.RawConn) error {
	if network != "tcp4" && network != "tcp6" {
		return &Refusal{Addr: address, Reason: "is not TCP (" + network + ")", ports: w.ports}
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &Refusal{Addr: address, Reason: "is not an address", ports: w.ports}
	}
	return w.CheckAddr(ap)
}

// DialContext connects to addr (host:port) over TCP if, and only if, the
// address it connects to is public. A name is resolved first and each of
// its addresses is tried in turn; each is checked as it is dialled.
func (w *Wall) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, &Refusal{Addr: addr, Reason: "is not TCP (" + network + ")", ports: w.ports}
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &Refusal{Addr: addr, Reason: "is not host:port", ports: w.ports}
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		ips = []netip.Addr{ip}
	} else {
		ips, err = w.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("look up %s: %w", host, err)
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("look up %s: no address", host)
		}
	}
	d := &net.Dialer{Timeout: w.timeout, Control: w.control}
	var first error
	for _, ip := range ips {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		var r *Refusal
		if errors.As(err, &r) {
			r.Host = host
			err = r
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

// CheckURL reports why the wall would refuse every connection a request
// for u makes — its port, a literal address it refuses, or a name whose
// every address it refuses — or nil. It lets a tool refuse before anyone
// is asked to approve a call that could only be refused. A name that does
// not resolve is not refused here: the dial says so.
func (w *Wall) CheckURL(ctx context.Context, u *url.URL) error {
	host := u.Hostname()
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return &Refusal{Host: host, Addr: net.JoinHostPort(host, port), Reason: "is not on a valid port"}
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else if ips, err = w.resolver.LookupNetIP(ctx, "ip", host); err != nil || len(ips) == 0 {
		return nil
	}
	var first error
	for _, ip := range ips {
		err := w.CheckAddr(netip.AddrPortFrom(ip, uint16(p)))
		if err == nil {
			return nil
		}
		if r, ok := err.(*Refusal); ok && ip.String() != host {
			r.Host = host
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// MaxRedirects is how many redirects a Client follows.
const MaxRedirects = 5

// Client returns an HTTP client whose every connection goes through the
// wall: no proxy from the environment (the check must see the target),
// http and https only, at most MaxRedirects redirects, each dialled
// through the wall again.
func (w *Wall) Client(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout:   timeout,
		Transport: w.Transport(),
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= MaxRedirects {
				return fmt.Errorf("stopped after %d redirects", MaxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to a %s: URL refused", req.URL.Scheme)
			}
			return nil
		},
	}
}

// Transport is an http.Transport dialling through the wall.
func (w *Wall) Transport() *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            w.DialContext,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  20 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		IdleConnTimeout:        30 * time.Second,
		ForceAttemptHTTP2:      true,
	}
}
