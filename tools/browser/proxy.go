package browser

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/tools/fence"
	"github.com/my-agent-crew/crew/tools/web/wall"
)

// proxy is one browser's forward proxy: every request of its pages
// (navigation, redirects, subresources, WebSockets tunnelled with CONNECT,
// service workers) arrives here and is dialled through the wall. It
// listens on loopback and answers only requests carrying its own random
// credential, which our Chromium gives when challenged (Fetch.authRequired),
// so no other local process can use it.
type proxy struct {
	wall     *wall.Wall
	user     string
	pass     string
	srv      *http.Server
	ln       net.Listener
	rp       *httputil.ReverseProxy
	mu       sync.Mutex
	refusals []refusal // the last few refusals, newest last, for the tool results
}

// refusal is one request the wall refused: to which host:port, and why.
type refusal struct{ hostPort, msg string }

func newProxy(w *wall.Wall) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("browser proxy: %w", err)
	}
	p := &proxy{wall: w, user: "crew", pass: fence.Nonce(), ln: ln}
	tr := w.Transport()
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = pr.In.URL
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Del("Proxy-Authorization")
		},
		Transport: tr,
		ErrorHandler: func(rw http.ResponseWriter, r *http.Request, err error) {
			p.refused(r.Host, err)
			rw.Header().Set("Content-Type", "text/html; charset=utf-8")
			rw.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(rw, "<!doctype html><title>Blocked by crew</title><h1>Blocked by crew</h1><p>%s</p>", html.EscapeString(err.Error()))
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

// Addr is the proxy's http://127.0.0.1:port.
func (p *proxy) Addr() string { return "http://" + p.ln.Addr().String() }

func (p *proxy) Close() { p.srv.Close() }

// refused remembers a refusal so the tool result can say why a page or a
// part of it did not load.
func (p *proxy) refused(host string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	msg := err.Error()
	if !strings.Contains(msg, host) {
		msg = host + ": " + msg
	}
	if _, _, e := net.SplitHostPort(host); e != nil {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "80")
	}
	p.refusals = append(p.refusals, refusal{host, msg})
	if len(p.refusals) > 20 {
		p.refusals = p.refusals[len(p.refusals)-20:]
	}
}

// takeRefusals returns and forgets the refusals since the last call.
func (p *proxy) takeRefusals() []refusal {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.refusals
	p.refusals = nil
	return out
}

func (p *proxy) authorized(r *http.Request) bool {
	h := r.Header.Get("Proxy-Authorization")
	b, ok := strings.CutPrefix(h, "Basic ")
	if !ok {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(b)
	if err != nil {
		return false
	}
	want := p.user + ":" + p.pass
	return subtle.ConstantTimeCompare(raw, []byte(want)) == 1
}

func (p *proxy) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if !p.authorized(r) {
		rw.Header().Set("Proxy-Authenticate", `Basic realm="crew"`)
		http.Error(rw, "proxy credential required", http.StatusProxyAuthRequired)
		return
	}
	if r.Method == http.MethodConnect {
		p.connect(rw, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(rw, "crew proxy: only absolute http:// requests and CONNECT", http.StatusBadRequest)
		return
	}
	p.rp.ServeHTTP(rw, r)
}

// connect tunnels https and WebSockets: the target is dialled through the
// wall before anything is answered.
func (p *proxy) connect(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	up, err := p.wall.DialContext(ctx, "tcp", r.Host)
	if err != nil {
		p.refused(r.Host, err)
		http.Error(rw, "Blocked by crew: "+err.Error(), http.StatusForbidden)
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
