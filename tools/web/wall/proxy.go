package wall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strings"
	"time"
)

// Proxy is a forward HTTP proxy whose every connection is dialled through
// its wall: absolute-form http:// requests are forwarded, CONNECT tunnels
// https (and anything else a client tunnels). A refusal is a 403 whose
// body says what was refused and why, before anything is dialled for it.
// Nothing here authenticates the client: whoever can connect to the
// proxy's listener uses it (a shell command's proxy listens inside that
// command's own network namespace).
type Proxy struct {
	wall    *Wall
	allow   func(host string) error
	refused func(host string, err error)
	rp      *httputil.ReverseProxy
}

// NewProxy returns a proxy dialling through w. allow, when not nil, is
// asked about each host (a name or an IP literal, without the port)
// first; its error refuses the request. refused, when not nil, hears of
// every refusal.
func NewProxy(w *Wall, allow func(host string) error, refused func(host string, err error)) *Proxy {
	p := &Proxy{wall: w, allow: allow, refused: refused}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = pr.In.URL
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Del("Proxy-Authorization")
			pr.Out.Header.Del("Proxy-Connection")
		},
		Transport: w.Transport(),
		ErrorHandler: func(rw http.ResponseWriter, r *http.Request, err error) {
			p.fail(rw, r.Host, err)
		},
	}
	return p
}

// fail answers a refused or failed request.
func (p *Proxy) fail(rw http.ResponseWriter, host string, err error) {
	code := http.StatusBadGateway
	if errors.Is(err, ErrRefused) {
		code = http.StatusForbidden
		if p.refused != nil {
			p.refused(host, err)
		}
	}
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.Header().Set("X-Content-Type-Options", "nosniff")
	rw.WriteHeader(code)
	fmt.Fprintf(rw, "Blocked by crew: %v\n", err)
}

// check asks allow about the host of hostport (or of a bare host).
func (p *Proxy) check(hostport string) error {
	if p.allow == nil {
		return nil
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return p.allow(strings.Trim(host, "[]"))
}

func (p *Proxy) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(rw, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(rw, "crew proxy: only absolute http:// requests and CONNECT (set HTTP_PROXY and HTTPS_PROXY to this proxy)", http.StatusBadRequest)
		return
	}
	if err := p.check(r.URL.Host); err != nil {
		p.fail(rw, r.URL.Host, err)
		return
	}
	p.rp.ServeHTTP(rw, r)
}

// connect tunnels a CONNECT: the target is dialled through the wall before
// anything is answered. The tunnel ends with the request's context (the
// server's BaseContext), so closing the proxy ends its tunnels too.
func (p *Proxy) connect(rw http.ResponseWriter, r *http.Request) {
	if err := p.check(r.Host); err != nil {
		p.fail(rw, r.Host, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	up, err := p.wall.DialContext(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		p.fail(rw, r.Host, err)
		return
	}
	hj, ok := rw.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(rw, "crew proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	stop := context.AfterFunc(r.Context(), func() { up.Close(); down.Close() })
	defer stop()
	io.WriteString(down, "HTTP/1.1 200 Connection Established\r\n\r\n")
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		up.Write(b)
	}
	done := make(chan struct{}, 2)
	go func() {
		io.Copy(up, down)
		if cw, ok := up.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() { io.Copy(down, up); down.Close(); done <- struct{}{} }()
	<-done
	<-done
	up.Close()
	down.Close()
}

// CheckHostPattern says what is wrong with a host pattern (shell_hosts):
// a host name ("github.com"), "*." and a name for any name below it
// ("*.githubusercontent.com"), or an IP literal; no scheme, port or path.
func CheckHostPattern(p string) error {
	name := strings.TrimPrefix(p, "*.")
	if name == "" || p != strings.TrimSpace(p) {
		return fmt.Errorf("want a host name such as github.com or *.github.com, got %q", p)
	}
	if _, err := netip.ParseAddr(name); err == nil && name == p {
		return nil
	}
	for _, label := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("want a host name such as github.com or *.github.com, got %q", p)
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("want a host name such as github.com or *.github.com (no scheme, port, path or other wildcard), got %q", p)
			}
		}
	}
	return nil
}

// MatchHost reports whether host (a name or an IP literal, without port)
// is one of patterns (see CheckHostPattern): names compare without case
// or a trailing dot; "*.example.com" matches every name below
// example.com, not example.com itself.
func MatchHost(patterns []string, host string) bool {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	for _, p := range patterns {
		p = strings.TrimSuffix(strings.ToLower(p), ".")
		if suffix, ok := strings.CutPrefix(p, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == p {
			return true
		}
	}
	return false
}
