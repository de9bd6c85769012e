package home

import (
	"fmt"
	"net"
	"path/filepath"
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
// is and where to log in, never the token itself.
func (h *Home) LoginHint(addr string, ln net.Addr) string {
	host, _, _ := net.SplitHostPort(addr)
	_, port, _ := net.SplitHostPort(ln.String())
	where := host
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		where = "<this machine's address>"
	}
	return fmt.Sprintf("generated an auth token for %s: it is %s in %s (not shown here). Log in at http://%s/login with it; scripts send Authorization: Bearer <token>.",
		addr, AuthTokenVar, filepath.Join(h.Dir, "env"), net.JoinHostPort(where, port))
}
