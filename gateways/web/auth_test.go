package web_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Item 2: weak tokens are refused with the reason; generated ones pass.
func TestCheckTokenRefusesWeakTokens(t *testing.T) {
	for _, weak := range []string{
		"a", "change-me", "s3cret", strings.Repeat("a", 64), strings.Repeat("ab", 32),
		"change-me-change-me-change-me-change-me", "my-long-password-for-the-crew-server-2026",
		"abcdefghijklmnopqrstuvwxyz0123456789",
	} {
		if err := web.CheckToken(weak); err == nil {
			t.Errorf("CheckToken(%q) accepted a weak token", weak)
		}
	}
	if err := web.CheckToken("a"); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Errorf("short token error = %v", err)
	}
	for range 200 {
		tok := web.GenerateToken()
		if err := web.CheckToken(tok); err != nil || len(tok) < 43 {
			t.Fatalf("generated %q: %v", tok, err)
		}
	}
	// What `openssl rand -hex 32` and `-base64 32` print.
	for _, ok := range []string{"5f0c9e4b7a1d2e8f3c6b9a0d4e7f1a2b8c5d3e6f9a0b1c4d7e2f5a8b3c6d9e0f", "q3Vx9Lr2+TzK8wYb1NcP5hJm7Gd0Fs4Ea6Ru2Ik8Oj0="} {
		if err := web.CheckToken(ok); err != nil {
			t.Errorf("CheckToken(%q) = %v", ok, err)
		}
	}
}

func loginForm(t *testing.T, c *http.Client, base string) string {
	t.Helper()
	resp, err := c.Get(base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	u, _ := url.Parse(base)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "crew_csrf" {
			return ck.Value
		}
	}
	t.Fatal("no CSRF cookie")
	return ""
}

// sessionBucket is a fresh events.SessionBucket on its own server, and
// that server's connection.
func sessionBucket(t *testing.T) (*events.Bucket, *nats.Conn) {
	t.Helper()
	srv, _ := eventstest.Start(t)
	b, err := events.OpenBucket(t.Context(), srv.Conn(), events.SessionBucket, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	return b, srv.Conn()
}

// bucketText is every value the session bucket holds now, with its key.
func bucketText(t *testing.T, nc *nats.Conn) string {
	t.Helper()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(t.Context(), events.SessionBucket)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.ListKeys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for k := range keys.Keys() {
		if e, err := kv.Get(t.Context(), k); err == nil {
			b.WriteString(k + "=" + string(e.Value()) + "\n")
		}
	}
	return b.String()
}

// Item 2: the login cookie is a random session id, never the token; the
// server keeps its hash in the cluster's session bucket (issue 30 item 4:
// every crew process on the cluster knows it); logout ends it.
func TestLoginCookieIsASessionNotTheToken(t *testing.T) {
	token := web.GenerateToken()
	cfg, _, _ := fullConfig(t, token)
	bucket, nc := sessionBucket(t)
	cfg.Sessions = web.SharedSessions(bucket)
	srv := newServer(t, cfg)
	c := client(t)
	csrf := loginForm(t, c, srv.URL)
	resp, err := c.PostForm(srv.URL+"/login", url.Values{"token": {token}, "csrf": {csrf}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var session *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "crew_session" {
			session = ck
		}
		if strings.Contains(ck.Value, token) {
			t.Errorf("cookie %s holds the token", ck.Name)
		}
	}
	if resp.StatusCode != http.StatusSeeOther || session == nil {
		t.Fatalf("login = %d, session cookie %v", resp.StatusCode, session)
	}
	if !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.MaxAge <= 0 || len(session.Value) < 40 {
		t.Errorf("session cookie = %+v", session)
	}
	held := bucketText(t, nc)
	if !strings.Contains(held, "created") {
		t.Fatalf("the session bucket holds no session after a login: %q", held)
	}
	if strings.Contains(held, token) || strings.Contains(held, session.Value) {
		t.Error("the session bucket holds the token or a session id, not a hash")
	}
	if resp, _ := c.Get(srv.URL + "/"); resp.StatusCode != 200 {
		t.Errorf("GET / with the session = %d", resp.StatusCode)
	}
	// A cookie holding the raw token (what the old server set) is no login.
	raw := &http.Client{CheckRedirect: c.CheckRedirect}
	req := get(t, srv.URL+"/")
	req.AddCookie(&http.Cookie{Name: "crew_session", Value: token})
	req.AddCookie(&http.Cookie{Name: "crew_auth", Value: token})
	if resp, _ := raw.Do(req); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("raw token as cookie = %d, want 303 to /login", resp.StatusCode)
	}
	// Another server on the same bucket (a restart, or a second crew
	// process on the cluster) knows the session.
	cfg2, _, _ := fullConfig(t, token)
	cfg2.Sessions = web.SharedSessions(bucket)
	srv2 := newServer(t, cfg2)
	req = get(t, srv2.URL+"/")
	req.AddCookie(session)
	if resp, _ := raw.Do(req); resp.StatusCode != 200 {
		t.Errorf("session on a second server = %d", resp.StatusCode)
	}
	// Logout on the first ends it on both.
	resp, err = c.PostForm(srv.URL+"/logout", url.Values{"csrf": {csrf}})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout = %v %v", resp, err)
	}
	for _, u := range []string{srv.URL, srv2.URL} {
		req = get(t, u+"/")
		req.AddCookie(session)
		if resp, _ := raw.Do(req); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("session after logout = %d, want 303", resp.StatusCode)
		}
	}
	if held := bucketText(t, nc); strings.Contains(held, "created") {
		t.Errorf("the session bucket after logout still holds a session: %s", held)
	}
}

// Issue 30 item 4: the sessions an older build kept in a 0600 file move
// into the bucket once (the file goes; a second start moves nothing) and
// still log in; one expired there is dropped; a file others can read is
// refused, naming the fix.
func TestSessionsFileOfAnOlderHomeMovesIntoTheBucket(t *testing.T) {
	token := web.GenerateToken()
	bucket, _ := sessionBucket(t)
	sessions := web.SharedSessions(bucket)
	// An older build's file: one live session, one logged in 40 days ago.
	id := "old-browser-session-id-0123456789abcdefghijklmnop"
	sum := sha256.Sum256([]byte(id))
	now := time.Now().UTC()
	file := filepath.Join(t.TempDir(), "web-sessions.json")
	body := fmt.Sprintf(`{"sessions":{%q:{"created":%q,"seen":%q},%q:{"created":%q,"seen":%q}}}`,
		hex.EncodeToString(sum[:]), now.Add(-time.Hour).Format(time.RFC3339), now.Format(time.RFC3339),
		strings.Repeat("ab", 32), now.Add(-40*24*time.Hour).Format(time.RFC3339), now.Format(time.RFC3339))
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := sessions.MigrateFile(t.Context(), file); err != nil || n != 1 {
		t.Fatalf("MigrateFile = %d, %v; want the one live session moved", n, err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the sessions file is still there after the move: %v", err)
	}
	if n, err := sessions.MigrateFile(t.Context(), file); err != nil || n != 0 {
		t.Errorf("a second MigrateFile = %d, %v; want nothing to move", n, err)
	}
	cfg, _, _ := fullConfig(t, token)
	cfg.Sessions = sessions
	srv := newServer(t, cfg)
	raw := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req := get(t, srv.URL+"/")
	req.AddCookie(&http.Cookie{Name: "crew_session", Value: id})
	if resp, err := raw.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("the moved session's GET / = %v %v, want 200", resp, err)
	}
	os.WriteFile(file, []byte(body), 0o644)
	if _, err := sessions.MigrateFile(t.Context(), file); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("MigrateFile(0644) = %v, want a refusal naming chmod 600", err)
	}
}

// Item 2, and issue 26 item 5: the token is compared first, so the right
// one logs in at once after five wrong ones; only failures are slowed:
// after 5 from one address it waits (429 with Retry-After), and during the
// wait only 3 more guesses are compared — 20 parallel wrong logins get 8
// comparisons — after which nothing is compared, the right token included,
// until the wait is over.
func TestLoginThrottledAfterFiveFailures(t *testing.T) {
	token := web.GenerateToken()
	cfg, _, _ := fullConfig(t, token)
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	cfg.Clock = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	wait := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	srv := newServer(t, cfg)
	c := client(t)
	csrf := loginForm(t, c, srv.URL)
	try := func(tok string) (int, string) {
		resp, err := c.PostForm(srv.URL+"/login", url.Values{"token": {tok}, "csrf": {csrf}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	for i := range 5 {
		if code, _ := try("wrong"); code != 401 {
			t.Fatalf("wrong login %d = %d, want 401", i+1, code)
		}
	}
	if code, _ := try(token); code != http.StatusSeeOther {
		t.Fatalf("the right token after five wrong ones = %d, want 303 at once", code)
	}
	// Guessing stays throttled: 20 more wrong guesses at once during the
	// wait, and the right token after them is not even compared.
	var wg sync.WaitGroup
	codes := make(chan int, 20)
	for range 20 {
		wg.Go(func() {
			code, _ := try("wrong")
			codes <- code
		})
	}
	wg.Wait()
	close(codes)
	counted := map[int]int{}
	for code := range codes {
		counted[code]++
	}
	if counted[429] != 20 {
		t.Fatalf("20 parallel wrong logins during the wait: %v, want 20×429", counted)
	}
	if code, after := try(token); code != 429 || after != "1" {
		t.Errorf("right token once the wait's comparisons are spent = %d Retry-After %q, want 429 1", code, after)
	}
	wait(999 * time.Millisecond)
	if code, _ := try(token); code != 429 {
		t.Errorf("right token 1 ms before the wait ends = %d, want 429", code)
	}
	wait(time.Millisecond)
	if code, _ := try("wrong"); code != 401 {
		t.Errorf("the 8th failure, after the wait = %d, want 401", code)
	}
	if code, _ := try(token); code != http.StatusSeeOther {
		t.Errorf("right token during the new wait, with comparisons to spare = %d, want 303", code)
	}
	if code, after := try("wrong"); code != 429 || after != "8" {
		t.Errorf("a wrong login during the new wait = %d Retry-After %q, want 429 8 (doubled per failure)", code, after)
	}
}

// TestBearerGuessesThrottledLikeLogins: a right Authorization header is
// compared first and served at once after five wrong ones (issue 26: five
// wrong tokens from loopback had locked the right one out for a minute);
// wrong ones count against the address like failed logins — after 5 the
// address waits, 429 with Retry-After, and of 20 parallel guesses during
// the wait only 3 are compared; then nothing is, the right token included,
// until the wait is over.
func TestBearerGuessesThrottledLikeLogins(t *testing.T) {
	token := web.GenerateToken()
	cfg, _, _ := fullConfig(t, token)
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	cfg.Clock = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	srv := newServer(t, cfg)
	try := func(tok string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/conversations", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	for i := range 5 {
		if code, _ := try("guess"); code != 401 {
			t.Fatalf("wrong token %d = %d, want 401", i+1, code)
		}
	}
	if code, _ := try(token); code != 200 {
		t.Fatalf("the right token after five wrong ones = %d, want 200 at once", code)
	}
	var wg sync.WaitGroup
	codes := make(chan int, 20)
	for range 20 {
		wg.Go(func() { code, _ := try("guess"); codes <- code })
	}
	wg.Wait()
	close(codes)
	counted := map[int]int{}
	for code := range codes {
		counted[code]++
	}
	if counted[429] != 20 {
		t.Fatalf("20 parallel wrong tokens during the wait: %v, want 20×429", counted)
	}
	if code, after := try(token); code != 429 || after != "1" {
		t.Errorf("right token once the wait's comparisons are spent = %d Retry-After %q, want 429 1", code, after)
	}
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	if code, _ := try(token); code != 200 {
		t.Errorf("right token after the wait = %d, want 200", code)
	}
	if code, _ := try("guess"); code != 401 {
		t.Errorf("the 8th wrong token, after the wait = %d, want 401", code)
	}
	if code, after := try("guess"); code != 429 || after != "8" {
		t.Errorf("a wrong token during the new wait = %d Retry-After %q, want 429 8 (success forgave nothing)", code, after)
	}
}

func newServer(t *testing.T, cfg web.Config) *httptest.Server {
	srv := httptest.NewServer(web.New(cfg))
	t.Cleanup(srv.Close)
	return srv
}

// A browser holding a session can end it from every page: the sidebar's
// sign-out form posts to /logout with the CSRF token. Without a token there
// is no session, so no form.
func TestSignOutOfferedWithAToken(t *testing.T) {
	token := web.GenerateToken()
	cfg, _, _ := fullConfig(t, token)
	bucket, _ := sessionBucket(t)
	cfg.Sessions = web.SharedSessions(bucket)
	srv := newServer(t, cfg)
	c := client(t)
	csrf := loginForm(t, c, srv.URL)
	if resp, err := c.PostForm(srv.URL+"/login", url.Values{"token": {token}, "csrf": {csrf}}); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login = %v %v", resp, err)
	}
	body := func(c *http.Client, base string) string {
		resp, err := c.Get(base + "/")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET / = %v %v", resp, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	page := body(c, srv.URL)
	if !strings.Contains(page, `data-testid="sign-out"`) || !strings.Contains(page, `action="/logout"`) {
		t.Fatalf("no sign-out form on the page of a signed-in browser")
	}
	resp, err := c.PostForm(srv.URL+"/logout", url.Values{"csrf": {csrf}})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out = %v %v", resp, err)
	}
	if resp, _ := c.Get(srv.URL + "/"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Errorf("after sign out GET / = %d to %q, want 303 to /login", resp.StatusCode, resp.Header.Get("Location"))
	}

	open, _, _ := fullConfig(t, "")
	srv2 := newServer(t, open)
	if strings.Contains(body(client(t), srv2.URL), `data-testid="sign-out"`) {
		t.Error("a server without a token offers a sign-out form")
	}
}
