package home

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// IsLoopback says whether addr (host:port) listens on loopback only.
func IsLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// CheckListen refuses a non-loopback address without an auth token.
func CheckListen(addr, token string) error {
	loopback, err := IsLoopback(addr)
	if err != nil || loopback {
		return err
	}
	if token == "" {
		return fmt.Errorf("listen address %s is not loopback: set auth_token in config.yaml (or CREW_AUTH_TOKEN in the env file) so every request needs it", addr)
	}
	return nil
}

// WebHosts are the names the server answers to besides loopback: web.hosts
// and the name it was told to listen on.
func (h *Home) WebHosts(addr string) []string {
	hosts := append([]string(nil), h.Config.Web.Hosts...)
	if host, _, err := net.SplitHostPort(addr); err == nil && host != "" && host != "localhost" && net.ParseIP(host) == nil {
		hosts = append(hosts, host)
	}
	return hosts
}

// ReachableURL is the URL of a listener as a local client reaches it: an
// unspecified address (0.0.0.0, [::]) is reached on 127.0.0.1.
func ReachableURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// LoginHint is what serve prints once after generating a token: where it
// is and where to log in, never the token itself. Listening on every
// address (0.0.0.0, [::]), it names one /login URL per address of the
// machine that is not loopback or link-local (IPv4 only for 0.0.0.0), and
// the machine's name when web.hosts lets the server answer to it (the
// host check refuses any other name: 421).
func (h *Home) LoginHint(addr string, ln net.Addr) string {
	host, _, _ := net.SplitHostPort(addr)
	_, port, _ := net.SplitHostPort(ln.String())
	var urls []string
	extra := ""
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		for _, a := range MachineAddrs(host == "" || ip.To4() != nil) {
			urls = append(urls, "http://"+net.JoinHostPort(a, port)+"/login")
		}
		if name, err := os.Hostname(); err == nil && name != "" {
			if slices.ContainsFunc(h.WebHosts(addr), func(w string) bool { return strings.EqualFold(w, name) }) {
				urls = append(urls, "http://"+net.JoinHostPort(name, port)+"/login")
			} else {
				extra = fmt.Sprintf(" To log in as http://%s/login, add %q to web.hosts in config.yaml.", net.JoinHostPort(name, port), name)
			}
		}
		if len(urls) == 0 {
			urls = append(urls, "http://"+net.JoinHostPort("127.0.0.1", port)+"/login")
		}
	} else {
		urls = append(urls, "http://"+net.JoinHostPort(host, port)+"/login")
	}
	return fmt.Sprintf("generated an auth token for %s: it is %s in %s (not shown here). Log in at %s with it; scripts send Authorization: Bearer <token>.%s",
		addr, AuthTokenVar, filepath.Join(h.Dir, "env"), strings.Join(urls, " or "), extra)
}

// MachineAddrs are the machine's interface addresses a client elsewhere
// can reach it on: not loopback, not link-local; IPv4 only when v4only.
func MachineAddrs(v4only bool) []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() || n.IP.IsUnspecified() || (v4only && n.IP.To4() == nil) {
			continue
		}
		out = append(out, n.IP.String())
	}
	return out
}
