package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/gateways/web"
	"go.etcd.io/bbolt"
)

// countingReceiver records messages that got through.
type countingReceiver struct{ calls int }

func (c *countingReceiver) Receive(context.Context, inbound.Message) (inbound.Accepted, error) {
	c.calls++
	return inbound.Accepted{ConversationID: "c1", MessageID: "m1"}, nil
}

// fullConfig wires every optional part, so that Routes lists every route
// the server can have. The parts a route must never reach under a foreign
// Host are interfaces left empty: a call would panic.
func fullConfig(t *testing.T, token string) (web.Config, *nopApprover, *countingReceiver) {
	t.Helper()
	_, log := eventstest.Start(t)
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "p.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ap, rcv := &nopApprover{}, &countingReceiver{}
	return web.Config{
		Log: log, Views: fakeViews{}, Health: func(context.Context) (bool, any) { return true, nil },
		AuthToken: token, Inbound: rcv, Approvals: ap, Questions: ap, AuditKey: testAuditKey,
		Live:          func(string, func([]byte)) (func(), error) { return func() {}, nil },
		Pages:         &web.Pages{DB: db, Location: time.UTC, Clock: time.Now},
		Jobs:          struct{ web.Jobs }{},
		Memory:        struct{ web.MemoryService }{},
		Conversations: struct{ web.ConversationOps }{},
	}, ap, rcv
}

// requestFor turns a mux pattern into a request that would reach it.
func requestFor(t *testing.T, base, pattern string) *http.Request {
	t.Helper()
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = http.MethodGet, pattern
	}
	path = strings.ReplaceAll(path, "{$}", "")
	path = strings.ReplaceAll(path, "{id}", "x1")
	path = strings.ReplaceAll(path, "{name}", "x.png")
	if strings.HasSuffix(path, "/") && path != "/" {
		path += "app.js"
	}
	if strings.Contains(path, "{") {
		t.Fatalf("pattern %q has a wildcard this test does not fill", pattern)
	}
	var body io.Reader
	ct := ""
	switch {
	case method == http.MethodPost && strings.HasPrefix(path, "/api/questions/"):
		body, ct = strings.NewReader(`{"answer":"hi"}`), "application/json"
	case method == http.MethodPost && strings.HasPrefix(path, "/api/approvals/"):
		body, ct = strings.NewReader(`{"decision":"approve","always":true}`), "application/json"
	case method == http.MethodPost && strings.HasPrefix(path, "/api/"):
		body, ct = strings.NewReader(`{"text":"hi"}`), "application/json"
	case method == http.MethodPost:
		body, ct = strings.NewReader(url.Values{"decision": {"always"}, "text": {"hi"}, "csrf": {strings.Repeat("a", 64)}}.Encode()), "application/x-www-form-urlencoded"
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	return req
}

// Item 1: a DNS-rebinding page (Host and Origin both attacker.example on
// our port) gets 421 on every route the mux has, with and without a token;
// the approval it tries to approve always is never decided.
func TestHostHeaderRejectedOnEveryRoute(t *testing.T) {
	for _, token := range []string{"", web.GenerateToken()} {
		cfg, ap, rcv := fullConfig(t, token)
		routes := web.Routes(cfg)
		if len(routes) < 30 {
			t.Fatalf("only %d routes listed: %v", len(routes), routes)
		}
		for _, want := range []string{"POST /api/approvals/{id}", "POST /api/questions/{id}", "POST /questions/{id}/answer", "GET /api/stream", "GET /api/conversations/{id}/export", "GET /static/", "POST /login", "GET /healthz"} {
			if !contains(routes, want) {
				t.Fatalf("route %q missing from %v", want, routes)
			}
		}
		srv := httptest.NewServer(web.New(cfg))
		port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
		evil := "attacker.example:" + port
		// A timeout: an SSE route that let the request through would
		// stream forever.
		hc := &http.Client{Timeout: 5 * time.Second}
		for _, pattern := range routes {
			req := requestFor(t, srv.URL, pattern)
			req.Host = evil
			req.Header.Set("Origin", "http://"+evil)
			req.Header.Set("Authorization", "Bearer "+token) // even the right token does not help a foreign Host
			resp, err := hc.Do(req)
			if err != nil {
				t.Errorf("%s with Host %s: %v", pattern, evil, err)
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusMisdirectedRequest {
				t.Errorf("token %v: %s with Host %s = %d, want 421", token != "", pattern, evil, resp.StatusCode)
				continue
			}
			if !strings.Contains(string(b), "127.0.0.1:"+port) || !strings.Contains(string(b), "localhost:"+port) {
				t.Errorf("%s: 421 does not name the allowed hosts: %s", pattern, b)
			}
			isJSON := strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json")
			if api := strings.Contains(pattern, "/api/") || strings.HasSuffix(pattern, "/healthz"); api != isJSON {
				t.Errorf("%s: Content-Type %q (JSON wanted: %v)", pattern, resp.Header.Get("Content-Type"), api)
			}
		}
		if ap.calls != 0 || rcv.calls != 0 || ap.answers != 0 {
			t.Errorf("under a foreign Host %d approvals were decided, %d questions answered and %d messages received", ap.calls, ap.answers, rcv.calls)
		}
		// The same approve+always on our own Host, without a browser's
		// Origin (a script), is decided: the test would see a leak.
		req := requestFor(t, srv.URL, "POST /api/approvals/{id}")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || ap.calls != 1 {
			t.Errorf("approve on 127.0.0.1 = %d (%d calls), want 200 and 1", resp.StatusCode, ap.calls)
		}
		srv.Close()
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Item 1: a browser's state-changing request needs an Origin that is one
// of the allowed hosts; no Origin (curl, scripts) is accepted; loopback
// names are all accepted as Host.
func TestOriginMustBeAnAllowedHost(t *testing.T) {
	cfg, _, rcv := fullConfig(t, "")
	srv := httptest.NewServer(web.New(cfg))
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	post := func(host, origin, referer string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/api/inbound", strings.NewReader(`{"text":"hi"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if referer != "" {
			req.Header.Set("Referer", referer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		host, origin, referer string
		want                  int
	}{
		{"127.0.0.1:" + port, "", "", 202},
		{"localhost:" + port, "http://localhost:" + port, "", 202},
		{"[::1]:" + port, "http://[::1]:" + port, "", 202},
		{"127.0.0.1:" + port, "http://attacker.example:" + port, "", 403},
		{"127.0.0.1:" + port, "http://127.0.0.1:1", "", 403}, // another port is another origin
		{"127.0.0.1:" + port, "null", "", 403},
		{"127.0.0.1:" + port, "", "http://attacker.example/page", 403},
		{"127.0.0.1:1", "", "", 421}, // the wrong port in Host
		{"127.0.0.1", "", "", 421},
		{"LOCALHOST:" + port, "", "", 202}, // names are case-insensitive
	} {
		if got := post(c.host, c.origin, c.referer); got != c.want {
			t.Errorf("Host %q Origin %q Referer %q = %d, want %d", c.host, c.origin, c.referer, got, c.want)
		}
	}
	if rcv.calls != 4 {
		t.Errorf("%d messages received, want 4", rcv.calls)
	}
	// A page from another site, even with our Host, is refused by
	// Sec-Fetch-Site.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/api/inbound", strings.NewReader(`{"text":"hi"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if code, _, _ := do(t, req); code != 403 {
		t.Errorf("Sec-Fetch-Site: cross-site = %d, want 403", code)
	}
}

// Item 1: web.hosts adds names only with a token; the 421 tells how.
func TestWebHostsNeedAToken(t *testing.T) {
	for _, token := range []string{"", web.GenerateToken()} {
		cfg, _, _ := fullConfig(t, token)
		cfg.Hosts = []string{"crew.example.com", "box.lan:8443"}
		srv := httptest.NewServer(web.New(cfg))
		port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
		for host, want := range map[string]int{
			"crew.example.com:" + port: 200,
			"crew.example.com":         200, // behind a proxy on 443
			"box.lan:8443":             200,
			"box.lan:" + port:          421,
			"other.example.com":        421,
		} {
			if token == "" {
				want = 421
			}
			req := get(t, srv.URL+"/api/conversations")
			req.Host = host
			req.Header.Set("Authorization", "Bearer "+token)
			code, body, _ := do(t, req)
			if code != want {
				t.Errorf("token %v: Host %s = %d %v, want %d", token != "", host, code, body, want)
			}
			if code == 421 {
				msg, _ := json.Marshal(body)
				if hint := map[bool]string{true: "web.hosts", false: "loopback names only"}[token != ""]; !strings.Contains(string(msg), hint) {
					t.Errorf("421 does not say %q: %s", hint, msg)
				}
			}
		}
		srv.Close()
	}
}

// The HTML 421 page escapes the Host it names.
func TestMisdirectedPageEscapesHost(t *testing.T) {
	cfg, _, _ := fullConfig(t, "")
	srv := httptest.NewServer(web.New(cfg))
	t.Cleanup(srv.Close)
	req := get(t, srv.URL+"/")
	req.Host = "<b>x</b>"
	code, _, raw := do(t, req)
	if code != 421 || strings.Contains(raw, "<b>x</b>") || !strings.Contains(raw, fmt.Sprintf("127.0.0.1:%s", srv.URL[strings.LastIndex(srv.URL, ":")+1:])) {
		t.Errorf("421 page = %d %q", code, raw)
	}
}

// R-REL-3: a body over web.MaxBody is refused with 413 and a JSON error,
// and nothing reaches the inbound door.
func TestOversizedBodyRefusedAndNothingStored(t *testing.T) {
	cfg, _, rcv := fullConfig(t, "")
	srv := httptest.NewServer(web.New(cfg))
	t.Cleanup(srv.Close)
	text := strings.Repeat("a", web.MaxBody+1)
	body := `{"text":"` + text + `"}`
	resp, err := http.Post(srv.URL+"/api/inbound", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatalf("413 body is not JSON: %v", err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge || e.Error.Code != "too_large" {
		t.Errorf("oversized inbound = %d %+v, want 413 with an error", resp.StatusCode, e)
	}
	if rcv.calls != 0 {
		t.Errorf("the door was called %d times for an oversized body", rcv.calls)
	}
}
