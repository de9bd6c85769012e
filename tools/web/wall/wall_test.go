package wall_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/tools/web/wall"
)

// mapResolver answers from a fixed map; an unknown name does not exist.
type mapResolver map[string][]netip.Addr

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, x := range s {
		out = append(out, netip.MustParseAddr(x))
	}
	return out
}

// TestWallRefusesEveryNonPublicClass (R-SEC-2): each class of address the
// wall exists to keep out is refused, with the class named, and public
// addresses on 80/443 pass the check.
func TestWallRefusesEveryNonPublicClass(t *testing.T) {
	w := wall.New()
	refused := map[string]string{
		"127.0.0.1:80":                "loopback",
		"127.8.9.10:443":              "loopback",
		"[::1]:80":                    "loopback",
		"10.1.2.3:80":                 "private",
		"172.16.0.1:443":              "private",
		"192.168.1.1:80":              "private",
		"[fd12:3456::1]:443":          "private",
		"169.254.10.1:80":             "link-local",
		"[fe80::1]:80":                "link-local",
		"169.254.169.254:80":          "metadata",
		"[fd00:ec2::254]:80":          "metadata",
		"100.64.0.1:80":               "CGNAT",
		"224.0.0.1:80":                "multicast",
		"[ff02::1]:80":                "multicast",
		"0.0.0.0:80":                  "unspecified",
		"[::]:80":                     "unspecified",
		"[::ffff:127.0.0.1]:80":       "IPv4-mapped form of a loopback",
		"[::ffff:169.254.169.254]:80": "IPv4-mapped form of a cloud metadata",
		"[::ffff:10.0.0.1]:443":       "IPv4-mapped form of a private",
		"198.18.0.1:80":               "not a public",
		"240.0.0.1:80":                "not a public",
		"8.8.8.8:22":                  "port 22",
		"8.8.8.8:8080":                "port 8080",
	}
	for a, class := range refused {
		err := w.CheckAddr(netip.MustParseAddrPort(a))
		if !errors.Is(err, wall.ErrRefused) || !strings.Contains(err.Error(), class) {
			t.Errorf("%s: %v, want a refusal naming %q", a, err, class)
		}
	}
	for _, a := range []string{"8.8.8.8:443", "1.1.1.1:80", "[2606:4700:4700::1111]:443"} {
		if err := w.CheckAddr(netip.MustParseAddrPort(a)); err != nil {
			t.Errorf("%s refused: %v", a, err)
		}
	}
}

// loopbackServer is a secret on 127.0.0.1 that nothing may reach.
func loopbackServer(t *testing.T) (*httptest.Server, netip.AddrPort) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "SECRET-INTERNAL")
	}))
	t.Cleanup(srv.Close)
	return srv, netip.MustParseAddrPort(srv.Listener.Addr().String())
}

// TestWallRefusesDNSRebinding: a name that resolves to loopback (or to a
// public and a private address, the private one tried) is refused on the
// address being dialled, not on the name.
func TestWallRefusesDNSRebinding(t *testing.T) {
	_, ap := loopbackServer(t)
	w := wall.New(wall.WithResolver(mapResolver{
		"rebind.test": addrs("127.0.0.1"),
		"mixed.test":  addrs("10.0.0.7", "::1"),
	}))
	for _, host := range []string{"rebind.test", "mixed.test"} {
		_, err := w.DialContext(context.Background(), "tcp", net.JoinHostPort(host, fmt.Sprint(ap.Port())))
		if !errors.Is(err, wall.ErrRefused) || !strings.Contains(err.Error(), host) {
			t.Errorf("%s: %v, want a refusal naming the host", host, err)
		}
	}
	// Through a client too: the check sees the IP after resolution.
	_, err := w.Client(5 * time.Second).Get("http://rebind.test:80/")
	if !errors.Is(err, wall.ErrRefused) {
		t.Fatalf("client GET rebind.test: %v", err)
	}
}

// TestWallRefusesRedirectToLoopback: a public page (here one admitted
// by a wall whose resolver says so is impossible, so the first hop is a
// public name served from a test transport) redirecting to loopback is
// refused on the second hop, which dials through the wall again.
func TestWallRefusesRedirectToLoopback(t *testing.T) {
	srv, _ := loopbackServer(t)
	w := wall.New()
	c := w.Client(5 * time.Second)
	public := &redirector{to: srv.URL + "/", next: c.Transport}
	c.Transport = public
	_, err := c.Get("http://public.example/")
	if !public.hit {
		t.Fatal("the first hop never ran")
	}
	if !errors.Is(err, wall.ErrRefused) || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("redirect to %s: %v, want the wall's refusal", srv.URL, err)
	}
}

// redirector answers the first request itself with a 302 (standing in for
// a public site) and hands the rest to the wall's transport.
type redirector struct {
	to   string
	next http.RoundTripper
	hit  bool
}

func (r *redirector) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == "public.example" {
		r.hit = true
		return &http.Response{StatusCode: http.StatusFound, Header: http.Header{"Location": {r.to}},
			Body: http.NoBody, Request: req}, nil
	}
	return r.next.RoundTrip(req)
}

// TestWallRefusesWebSocketToLoopback: a WebSocket is a TCP connection
// like any other; the upgrade to a loopback listener is refused at dial.
func TestWallRefusesWebSocketToLoopback(t *testing.T) {
	_, ap := loopbackServer(t)
	w := wall.New()
	req, _ := http.NewRequest("GET", "http://"+ap.String()+"/ws", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	_, err := w.Client(5 * time.Second).Do(req)
	if !errors.Is(err, wall.ErrRefused) {
		t.Fatalf("websocket upgrade to %s: %v", ap, err)
	}
	if _, err := w.DialContext(context.Background(), "tcp", "[::ffff:127.0.0.1]:"+fmt.Sprint(ap.Port())); !errors.Is(err, wall.ErrRefused) {
		t.Fatalf("IPv4-mapped literal: %v", err)
	}
	if _, err := w.DialContext(context.Background(), "udp", "8.8.8.8:443"); !errors.Is(err, wall.ErrRefused) {
		t.Fatalf("udp: %v", err)
	}
}

// TestWallRefusesDisguisedLoopback: the spellings of a private address
// that slip past a check on the URL's text. Decimal, octal and hex IPv4
// (2130706433, 017700000001, 0x7f.1) are not IP literals to Go, so they go
// to the resolver, whose answer (here the 127.0.0.1 a libc resolver would
// make of them) is checked like any; IPv4-compatible, NAT64 and 6to4 forms
// embedding 127.0.0.1, and zoned link-local and loopback literals, are
// refused as they are dialled.
func TestWallRefusesDisguisedLoopback(t *testing.T) {
	loop := addrs("127.0.0.1")
	w := wall.New(wall.WithResolver(mapResolver{"2130706433": loop, "017700000001": loop, "0x7f.1": loop, "0x7f000001": loop, "127.1": loop}))
	c := w.Client(5 * time.Second)
	for _, u := range []string{
		"http://2130706433/", "http://017700000001/", "http://0x7f.1/", "http://0x7f000001/", "http://127.1/",
		"http://[::ffff:7f00:1]/", "http://[::127.0.0.1]/", "http://[64:ff9b::7f00:1]/", "http://[2002:7f00:1::]/",
		"http://[fe80::1%25lo]/", "http://[::1%25lo]/", "http://[::ffff:127.0.0.1%25lo]/", "http://0.0.0.0/", "http://[::]/",
	} {
		if _, err := c.Get(u); !errors.Is(err, wall.ErrRefused) {
			t.Errorf("GET %s: %v, want the wall's refusal", u, err)
		}
	}
}

// TestWallWithPortsStaysPublic: shell_ports changes the ports, never the
// addresses: loopback and private addresses stay refused on a listed
// port, the refusal names the ports in force, and a port left out is
// refused.
func TestWallWithPortsStaysPublic(t *testing.T) {
	w := wall.New(wall.WithPorts(8443, 22, 22))
	if got := w.PortList(); fmt.Sprint(got) != "[22 8443]" {
		t.Errorf("ports %v", got)
	}
	for a, class := range map[string]string{
		"127.0.0.1:22":       "loopback",
		"10.0.0.1:8443":      "private",
		"8.8.8.8:443":        "port 443",
		"169.254.169.254:22": "cloud metadata",
	} {
		err := w.CheckAddr(netip.MustParseAddrPort(a))
		if !errors.Is(err, wall.ErrRefused) || !strings.Contains(err.Error(), class) || !strings.Contains(err.Error(), "only public addresses on ports 22 and 8443 are reached") {
			t.Errorf("%s: %v, want a refusal naming %q and the ports", a, err, class)
		}
	}
	for _, a := range []string{"8.8.8.8:22", "[2606:4700:4700::1111]:8443"} {
		if err := w.CheckAddr(netip.MustParseAddrPort(a)); err != nil {
			t.Errorf("%s refused: %v", a, err)
		}
	}
	if err := wall.New(wall.WithPorts()).CheckAddr(netip.MustParseAddrPort("8.8.8.8:443")); err != nil {
		t.Errorf("no ports given: %v, want the default 80 and 443", err)
	}
}

// TestMatchHost: shell_hosts patterns match names without case or a
// trailing dot; "*.x" matches every name below x and not x itself, nor a
// name that merely ends in x; bad patterns are named.
func TestMatchHost(t *testing.T) {
	pats := []string{"github.com", "*.githubusercontent.com", "140.82.112.3"}
	for host, want := range map[string]bool{
		"github.com": true, "GitHub.com.": true, "api.github.com": false, "evilgithub.com": false,
		"raw.githubusercontent.com": true, "a.b.githubusercontent.com": true, "githubusercontent.com": false,
		"evilgithubusercontent.com": false, "140.82.112.3": true, "[140.82.112.3]": true, "140.82.112.4": false,
	} {
		if got := wall.MatchHost(pats, host); got != want {
			t.Errorf("MatchHost(%q) = %v, want %v", host, got, want)
		}
	}
	for _, p := range []string{"github.com", "*.github.com", "xn--bcher-kva.de", "::1", "10.0.0.1", "a_b.example."} {
		if err := wall.CheckHostPattern(p); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	for _, p := range []string{"", "*", "*.", "https://github.com", "github.com:443", "github.com/x", "a.*.com", "*github.com", " github.com", "a..b"} {
		if err := wall.CheckHostPattern(p); err == nil {
			t.Errorf("%q accepted", p)
		}
	}
}
