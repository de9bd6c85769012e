package web

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
)

// Who may name this server. A DNS-rebinding page gets the browser to send
// requests to 127.0.0.1 under the attacker's name: its Host and Origin are
// both "attacker.example:PORT". So the Host must be one of ours before any
// route runs (421 otherwise), and a state-changing request from a browser
// must come from a page of ours (its Origin one of the allowed hosts).

// router is a ServeMux that remembers its patterns, so a test can walk
// every route and none escapes the host check.
type router struct {
	*http.ServeMux
	patterns []string
}

func newRouter() *router { return &router{ServeMux: http.NewServeMux()} }

func (m *router) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.HandleFunc(pattern, h)
}

func (m *router) Handle(pattern string, h http.Handler) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.Handle(pattern, h)
}

// Routes lists the patterns New registers for cfg ("GET /c/{id}", …),
// sorted. Tests walk it to try every route.
func Routes(cfg Config) []string {
	s := &server{cfg: cfg}
	m := s.routes()
	out := slices.Clone(m.patterns)
	sort.Strings(out)
	return out
}

// hostPolicy holds the names this server answers to besides loopback.
type hostPolicy struct {
	withPort []string // "name:port" entries, exact
	names    []string // "name" entries: on the listening port, or portless behind a proxy
	token    bool     // a token is set: the address a connection reached is also ours
}

func newHostPolicy(cfg Config) hostPolicy {
	p := hostPolicy{token: cfg.AuthToken != ""}
	if !p.token {
		return p // loopback only: extra names need a token (checked by serve too)
	}
	for _, h := range cfg.Hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(h); err == nil {
			p.withPort = append(p.withPort, h)
		} else {
			p.names = append(p.names, h)
		}
	}
	return p
}

// allowed lists the Host values accepted on the connection r came in on.
// Without the listening port (no local address), only configured
// host:port entries match: fail closed.
func (p hostPolicy) allowed(r *http.Request) []string {
	var out []string
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	port := ""
	var localIP net.IP
	if local != nil {
		if h, pt, err := net.SplitHostPort(local.String()); err == nil {
			port = pt
			localIP = net.ParseIP(h)
		}
	}
	if port != "" {
		out = append(out, "127.0.0.1:"+port, "localhost:"+port, "[::1]:"+port)
		if p.token && localIP != nil && !localIP.IsLoopback() {
			// The address the client connected to, as an IP literal: a
			// rebinding page always sends its own name, never our IP.
			out = append(out, net.JoinHostPort(localIP.String(), port))
		}
		for _, n := range p.names {
			out = append(out, net.JoinHostPort(strings.Trim(n, "[]"), port), n)
		}
	}
	return append(out, p.withPort...)
}

// isStateChanging: anything but a read.
func isStateChanging(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// guardHost answers 421 to a Host that is not ours and 403 to a browser's
// state-changing request from a page that is not ours, on every route.
func (s *server) guardHost(next http.Handler) http.Handler {
	policy := newHostPolicy(s.cfg)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowed := policy.allowed(r)
		host := strings.ToLower(r.Host)
		if !slices.Contains(allowed, host) {
			misdirected(w, r, allowed, policy.token)
			return
		}
		if isStateChanging(r.Method) {
			if why := originRefused(r, allowed); why != "" {
				writeError(w, http.StatusForbidden, "csrf", why)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// originRefused explains why a state-changing request's origin is not
// ours, or returns "". A request with neither Origin nor Referer is not a
// browser's cross-site request (curl, scripts): the token still guards it.
func originRefused(r *http.Request, allowed []string) string {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return "cross-site request refused"
	}
	src, what := r.Header.Get("Origin"), "Origin"
	if src == "" {
		src, what = r.Header.Get("Referer"), "Referer"
	}
	if src == "" {
		return ""
	}
	u, err := url.Parse(src)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("cross-origin request refused: %s %q is not a page of this server", what, src)
	}
	if !slices.Contains(allowed, strings.ToLower(u.Host)) {
		return fmt.Sprintf("cross-origin request refused: %s %q is not one of %s", what, src, strings.Join(allowed, ", "))
	}
	return ""
}

var misdirectedPage = template.Must(template.New("421").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Wrong address</title></head>
<body><h1>421 Misdirected Request</h1>
<p>This server does not answer to <code>{{.Host}}</code>. Open it at one of:</p>
<ul>{{range .Allowed}}<li><code>{{.}}</code></li>{{end}}</ul>
<p>{{.Hint}}</p></body></html>
`))

func misdirected(w http.ResponseWriter, r *http.Request, allowed []string, token bool) {
	hint := "Without an auth token this server answers on loopback names only."
	if token {
		hint = "To reach it under another name, add that name to web.hosts in config.yaml."
	}
	if strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/api" || r.URL.Path == "/healthz" || wantsJSON(r) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusMisdirectedRequest)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"code":          "misdirected",
			"message":       fmt.Sprintf("this server does not answer to Host %q; use one of %s. %s", r.Host, strings.Join(allowed, ", "), hint),
			"allowed_hosts": allowed,
		}})
		return
	}
	htmlHeaders(w)
	w.WriteHeader(http.StatusMisdirectedRequest)
	misdirectedPage.Execute(w, map[string]any{"Host": r.Host, "Allowed": allowed, "Hint": hint})
}
