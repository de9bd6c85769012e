package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
)

// The secrets serve needs are settled before anything else starts: the
// audit key and, for a non-loopback listen, the auth token are written to
// <home>/env first, so everything built from the env file afterwards (the
// redactor among them) knows them. Neither is ever printed or logged.

// secretSource names where a secret came from, for error messages.
func secretSource(env *cliEnv, h *home.Home, name string) string {
	if env.getenv != nil && env.getenv(name) != "" {
		return name + " in the process environment"
	}
	return name + " in " + filepath.Join(h.Dir, "env")
}

// auditKey returns the home's audit key, creating it in <home>/env when
// there is none (a home made before keyed exports).
func auditKey(env *cliEnv, h *home.Home) ([]byte, error) {
	if v := h.Getenv(home.AuditKeyVar, env.getenv); v != "" {
		if len(v) < events.MinAuditKey {
			return nil, fmt.Errorf("%s is %d bytes: want at least %d random bytes (delete the line and crew serve writes a new one)", secretSource(env, h, home.AuditKeyVar), len(v), events.MinAuditKey)
		}
		return []byte(v), nil
	}
	v, _, err := home.EnsureEnvSecret(h.Dir, home.AuditKeyVar, "audit key of this home: keys the hash chain of crew export (crew verify proves a file came from here)", home.NewSecret)
	if err != nil {
		return nil, fmt.Errorf("create the audit key: %w", err)
	}
	h.Env[home.AuditKeyVar] = v
	events.Secrets().Add(home.AuditKeyVar, v) // loadHome taught the redactor the file before this line was in it
	return []byte(v), nil
}

// configuredToken is the auth token and where it came from ("" if none).
func configuredToken(env *cliEnv, h *home.Home) (token, source string) {
	if h.Config.AuthToken != "" {
		return h.Config.AuthToken, "auth_token in " + filepath.Join(h.Dir, "config.yaml")
	}
	if v := h.Getenv(home.AuthTokenVar, env.getenv); v != "" {
		return v, secretSource(env, h, home.AuthTokenVar)
	}
	return "", ""
}

// serveAuth settles the token for a server listening on addr: a token set
// anywhere must be strong; a non-loopback address without one gets a
// generated CREW_AUTH_TOKEN in <home>/env (generated true); web.hosts
// needs a token.
func serveAuth(env *cliEnv, h *home.Home, addr string) (token string, generated bool, err error) {
	loopback, err := isLoopback(addr)
	if err != nil {
		return "", false, err
	}
	token, source := configuredToken(env, h)
	if token != "" {
		if err := web.CheckToken(token); err != nil {
			return "", false, fmt.Errorf("the auth token (%s) %v", source, err)
		}
	}
	if err := checkConfigMode(h); err != nil {
		return "", false, err
	}
	if token == "" && !loopback {
		token, _, err = home.EnsureEnvSecret(h.Dir, home.AuthTokenVar, "auth token of the web UI and API (crew serve generated it for a non-loopback listen)", web.GenerateToken)
		if err != nil {
			return "", false, fmt.Errorf("generate an auth token: %w", err)
		}
		h.Env[home.AuthTokenVar] = token
		events.Secrets().Add(home.AuthTokenVar, token)
		generated = true
	}
	if token == "" && len(h.Config.Web.Hosts) > 0 {
		return "", false, fmt.Errorf("web.hosts in %s names %v, but no auth token is set: other names need one (CREW_AUTH_TOKEN in %s; crew serve --listen on a non-loopback address generates it)",
			filepath.Join(h.Dir, "config.yaml"), h.Config.Web.Hosts, filepath.Join(h.Dir, "env"))
	}
	return token, generated, nil
}

// checkConfigMode refuses a config.yaml that holds a secret (auth_token)
// while others can read it, as Load refuses such an env file.
func checkConfigMode(h *home.Home) error {
	var holds []string
	if h.Config.AuthToken != "" {
		holds = append(holds, "auth_token")
	}
	if len(holds) == 0 {
		return nil
	}
	cfg := filepath.Join(h.Dir, "config.yaml")
	fi, err := os.Stat(cfg)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	sort.Strings(holds)
	return fmt.Errorf("%s holds %s and is mode %04o, readable by others: run chmod 600 %s (or keep secrets in %s)",
		cfg, strings.Join(holds, ", "), fi.Mode().Perm(), cfg, filepath.Join(h.Dir, "env"))
}

// isLoopback says whether addr (host:port) listens on loopback only.
func isLoopback(addr string) (bool, error) {
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

// webHosts are the names the server answers to besides loopback: web.hosts
// and the name it was told to listen on.
func webHosts(h *home.Home, addr string) []string {
	hosts := append([]string(nil), h.Config.Web.Hosts...)
	if host, _, err := net.SplitHostPort(addr); err == nil && host != "" && host != "localhost" && net.ParseIP(host) == nil {
		hosts = append(hosts, host)
	}
	return hosts
}

// reachableURL is the URL of a listener as a local client reaches it: an
// unspecified address (0.0.0.0, [::]) is reached on 127.0.0.1.
func reachableURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// loginHint is what serve prints once after generating a token: where it
// is and where to log in, never the token itself.
func loginHint(h *home.Home, addr string, ln net.Addr) string {
	host, _, _ := net.SplitHostPort(addr)
	_, port, _ := net.SplitHostPort(ln.String())
	where := host
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		where = "<this machine's address>"
	}
	return fmt.Sprintf("generated an auth token for %s: it is %s in %s (not shown here). Log in at http://%s/login with it; scripts send Authorization: Bearer <token>.",
		addr, home.AuthTokenVar, filepath.Join(h.Dir, "env"), net.JoinHostPort(where, port))
}

// printWebTrust is doctor's view of who can reach the server and whether
// exports are keyed; it names where secrets are, never their values.
func printWebTrust(w io.Writer, env *cliEnv, h *home.Home) {
	token, source := configuredToken(env, h)
	loopback, _ := isLoopback(h.Config.Listen)
	hosts := "127.0.0.1, localhost, [::1]"
	if token != "" && len(h.Config.Web.Hosts) > 0 {
		hosts += ", " + strings.Join(h.Config.Web.Hosts, ", ")
	}
	switch {
	case token != "":
		state := "ok"
		if err := web.CheckToken(token); err != nil {
			state = "refused by crew serve: " + err.Error()
		}
		fmt.Fprintf(w, "web: auth token from %s (%s); answers to %s\n", source, state, hosts)
	case !loopback:
		fmt.Fprintf(w, "web: listen %s is not loopback and no token is set: crew serve will generate %s in %s\n", h.Config.Listen, home.AuthTokenVar, filepath.Join(h.Dir, "env"))
	case len(h.Config.Web.Hosts) > 0:
		fmt.Fprintf(w, "web: web.hosts is set but no auth token: crew serve refuses it\n")
	default:
		fmt.Fprintf(w, "web: loopback only, no auth token; answers to %s\n", hosts)
	}
	if h.Getenv(home.AuditKeyVar, env.getenv) != "" {
		fmt.Fprintf(w, "audit key: %s (exports are keyed; crew verify proves their origin)\n", secretSource(env, h, home.AuditKeyVar))
	} else {
		fmt.Fprintf(w, "audit key: none yet: the next crew serve or crew export writes %s to %s\n", home.AuditKeyVar, filepath.Join(h.Dir, "env"))
	}
}
