package web_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"go.etcd.io/bbolt"
)

type nopApprover struct{ calls, answers int }

// Answer counts answers: nopApprover answers questions too.
func (a *nopApprover) Answer(context.Context, string, string, string) error {
	a.answers++
	return nil
}

func (a *nopApprover) Decide(context.Context, string, bool, bool, string) (string, error) {
	a.calls++
	return "approved", nil
}

func newSite(t *testing.T, token string) (*httptest.Server, *nopApprover) {
	t.Helper()
	h := newHarness(t)
	convs := loop.NewConvs(h.log, nil)
	in := &inbound.Inbound{Convs: convs, Kick: loop.KickFunc(func(string) {}), Master: "master", Crew: loop.Agents{"master": {ID: "master"}},
		Clock: loop.WallClock{Zone: time.UTC}}
	ap := &nopApprover{}
	srv := newServer(t, web.Config{Log: h.log, Views: fakeViews{}, Health: func(context.Context) (bool, any) { return true, nil }, AuthToken: token,
		Inbound: in, Approvals: ap, Questions: ap, Pages: h.pages()})
	return srv, ap
}

func client(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func csrfOf(t *testing.T, c *http.Client, base string) string {
	t.Helper()
	resp, err := c.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP = %q", csp)
	}
	u, _ := url.Parse(base)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "crew_csrf" {
			return ck.Value
		}
	}
	t.Fatal("no CSRF cookie set")
	return ""
}

// Every state-changing form needs the CSRF token and the same origin.
func TestFormsNeedCSRFTokenAndSameOrigin(t *testing.T) {
	srv, ap := newSite(t, "")
	c := client(t)
	tok := csrfOf(t, c, srv.URL)
	post := func(path string, form url.Values, origin string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("/send", url.Values{"text": {"hi"}}, ""); code != 403 {
		t.Errorf("send without token = %d, want 403", code)
	}
	if code := post("/send", url.Values{"text": {"hi"}, "csrf": {wrongToken(tok)}}, ""); code != 403 {
		t.Errorf("send with a wrong token = %d, want 403", code)
	}
	if code := post("/send", url.Values{"text": {"hi"}, "csrf": {tok}}, "http://evil.example"); code != 403 {
		t.Errorf("send from another origin = %d, want 403", code)
	}
	if code := post("/send", url.Values{"text": {"hi"}, "csrf": {tok}}, srv.URL); code != http.StatusSeeOther {
		t.Errorf("send with token = %d, want 303", code)
	}
	if code := post("/approvals/a1/decide", url.Values{"decision": {"approve"}}, ""); code != 403 || ap.calls != 0 {
		t.Errorf("decide without token = %d (%d calls)", code, ap.calls)
	}
	if code := post("/approvals/a1/decide", url.Values{"decision": {"approve"}, "csrf": {tok}, "back": {"/c/x"}}, ""); code != http.StatusSeeOther || ap.calls != 1 {
		t.Errorf("decide with token = %d (%d calls)", code, ap.calls)
	}
	if code := post("/questions/q1/answer", url.Values{"choice": {"Tuesday"}}, ""); code != 403 || ap.answers != 0 {
		t.Errorf("answer without token = %d (%d answers)", code, ap.answers)
	}
	if code := post("/questions/q1/answer", url.Values{"choice": {"Tuesday"}, "csrf": {tok}}, "http://evil.example"); code != 403 || ap.answers != 0 {
		t.Errorf("answer from another origin = %d (%d answers)", code, ap.answers)
	}
	if code := post("/questions/q1/answer", url.Values{"text": {"Tuesday"}, "csrf": {tok}, "back": {"/c/x"}}, ""); code != http.StatusSeeOther || ap.answers != 1 {
		t.Errorf("answer with token = %d (%d answers)", code, ap.answers)
	}
	// The JSON API refuses form posts (a cross-site form cannot send JSON).
	resp, _ := c.Post(srv.URL+"/api/inbound", "application/x-www-form-urlencoded", strings.NewReader("text=hi"))
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("form-encoded API post = %d, want 415", resp.StatusCode)
	}
}

// With an auth token, pages redirect to the login form; the form sets the
// cookie; the API wants the bearer token or the cookie.
func TestAuthTokenLogin(t *testing.T) {
	srv, _ := newSite(t, "s3cret")
	c := client(t)
	resp, _ := c.Get(srv.URL + "/")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Fatalf("GET / without login = %d → %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ = c.Get(srv.URL + "/login")
	resp.Body.Close()
	u, _ := url.Parse(srv.URL)
	var tok string
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "crew_csrf" {
			tok = ck.Value
		}
	}
	resp, _ = c.PostForm(srv.URL+"/login", url.Values{"token": {"wrong"}, "csrf": {tok}})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token login = %d", resp.StatusCode)
	}
	resp, _ = c.PostForm(srv.URL+"/login", url.Values{"token": {"s3cret"}, "csrf": {tok}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login = %d", resp.StatusCode)
	}
	resp, _ = c.Get(srv.URL + "/")
	if resp.StatusCode != 200 {
		t.Errorf("GET / after login = %d", resp.StatusCode)
	}
	resp, _ = http.Get(srv.URL + "/api/conversations")
	if resp.StatusCode != 401 {
		t.Errorf("API without token = %d", resp.StatusCode)
	}
}

// R-OBS-1: the activity feed carries every conversation's run and approval
// events; a reconnect with Last-Event-ID resumes right after that event.
func TestActivityFeedResumesWithoutGapOrRepeat(t *testing.T) {
	_, log := eventstest.Start(t)
	db, _ := bbolt.Open(filepath.Join(t.TempDir(), "p.db"), 0o600, nil)
	t.Cleanup(func() { db.Close() })
	srv := httptest.NewServer(web.New(web.Config{Log: log, Views: fakeViews{}, Health: func(context.Context) (bool, any) { return true, nil },
		Pages: &web.Pages{DB: db, Location: time.UTC, Clock: time.Now}}))
	t.Cleanup(srv.Close)
	var seqs []uint64
	for i, conv := range []string{"a", "b", "c"} {
		stored, err := log.Append(t.Context(), events.Conv(conv), 0,
			events.MustNew(&events.RunStarted{RunID: fmt.Sprint("r", i), Agent: "master", Trigger: "message"}),
			events.MustNew(&events.SteersApplied{RunID: fmt.Sprint("r", i), Step: 1, SteerIDs: []string{"s"}})) // not activity
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, stored[0].Seq)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/api/activity", nil)
	req.Header.Set("Last-Event-ID", fmt.Sprint(seqs[0]))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var ids []string
	for sc.Scan() && len(ids) < 2 {
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			ids = append(ids, id)
		}
	}
	if want := []string{fmt.Sprint(seqs[1]), fmt.Sprint(seqs[2])}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("ids after resuming = %v, want %v (run starts of b and c only)", ids, want)
	}
}

// wrongToken is tok with its first character changed: never tok itself.
func wrongToken(tok string) string {
	if strings.HasPrefix(tok, "0") {
		return "1" + tok[1:]
	}
	return "0" + tok[1:]
}
