package browser

import (
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/tools/fence"
	"github.com/my-agent-crew/crew/tools/web/wall"
)

// proxy is one browser's forward proxy: every request of its pages
// (navigation, redirects, subresources, WebSockets tunnelled with CONNECT,
// service workers) arrives here and is dialled through the wall
// (wall.Proxy). It listens on loopback and answers only requests carrying
// its own random credential, which our Chromium gives when challenged
// (Fetch.authRequired), so no other local process can use it.
type proxy struct {
	user     string
	pass     string
	srv      *http.Server
	ln       net.Listener
	forward  *wall.Proxy
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
	p := &proxy{user: "crew", pass: fence.Nonce(), ln: ln}
	p.forward = wall.NewProxy(w, nil, p.refused)
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
	p.forward.ServeHTTP(rw, r)
}
