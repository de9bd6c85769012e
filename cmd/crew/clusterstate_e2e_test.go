package main

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/web"
)

// Issue 30 item 4: two real crew serve processes on a 3-node cluster
// share the web logins (crew_web_sessions): a browser that logged in on
// one is logged in on the other, and a logout on the other ends it on
// both.
func TestClusterServesShareWebLogins(t *testing.T) {
	c := eventstest.StartCluster(t, 3)
	var urls []string
	var token string
	for _, name := range []string{"a", "b"} {
		dir := filepath.Join(t.TempDir(), name)
		if _, _, code := crew(t, dir, "init"); code != 0 {
			t.Fatal("init failed")
		}
		setNATSURL(t, dir, c.URL())
		tok, _, err := home.EnsureEnvSecret(dir, home.AuthTokenVar, "test", web.GenerateToken)
		if err != nil {
			t.Fatal(err)
		}
		if token == "" {
			token = tok
		}
		s := startServe(t, dir)
		defer s.stop(t)
		urls = append(urls, s.url)
	}
	a, b := urls[0], urls[1]
	// One browser (one cookie jar), used on both servers' pages.
	jar, _ := cookiejar.New(nil)
	c1 := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(base string, cookie *http.Cookie) int {
		req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := c1.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	cookieOf := func(base, name string) *http.Cookie {
		u, _ := url.Parse(base)
		for _, ck := range jar.Cookies(u) {
			if ck.Name == name {
				return ck
			}
		}
		return nil
	}
	if code := get(b, nil); code != http.StatusSeeOther {
		t.Fatalf("GET / on b without a login = %d, want 303", code)
	}
	get(a, nil)
	c1.Get(a + "/login")
	csrf := cookieOf(a, "crew_csrf")
	if csrf == nil {
		t.Fatal("no CSRF cookie from a's login page")
	}
	resp, err := c1.PostForm(a+"/login", url.Values{"token": {token}, "csrf": {csrf.Value}})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login on a = %v %v", resp, err)
	}
	session := cookieOf(a, "crew_session")
	if session == nil {
		t.Fatal("no session cookie after the login on a")
	}
	// Both servers are on 127.0.0.1, so the jar sends the session to b too;
	// it is added by hand as well, to be sure the cookie is what b sees.
	if code := get(b, session); code != 200 {
		t.Fatalf("GET / on b with a's session = %d, want 200 (b knows the login)", code)
	}
	resp, err = c1.PostForm(b+"/logout", url.Values{"csrf": {csrf.Value}})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout on b = %v %v", resp, err)
	}
	if code := get(a, session); code != http.StatusSeeOther {
		t.Errorf("GET / on a after the logout on b = %d, want 303 to /login", code)
	}
}
