package main

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// Issue 30 item 4: a tool output cut on one crew process is kept in the
// cluster's object store (crew_spill), not in that process's home, so
// another crew process that runs the conversation next reads it again
// with tool_output_read. Process a reads a long file (cut at 200
// characters) and stops; process b, on the same cluster with a home of
// its own, gets the next message of that conversation and reads the cut
// output's end.
func TestClusterServesShareSpilledOutputs(t *testing.T) {
	c := eventstest.StartCluster(t, 3)
	homes := map[string]string{}
	for _, name := range []string{"a", "b"} {
		dir := filepath.Join(t.TempDir(), name)
		if _, _, code := crew(t, dir, "init"); code != 0 {
			t.Fatal("init failed")
		}
		setNATSURL(t, dir, c.URL())
		appendFile(t, filepath.Join(dir, "agent.yaml"), "tool_output_chars: 200\n")
		homes[name] = dir
	}
	var long strings.Builder
	for i := range 1500 { // workspace_read shows 2,000 lines at most
		fmt.Fprintf(&long, "line %d of the long file\n", i)
	}
	long.WriteString("the end of the long file\n")
	os.MkdirAll(filepath.Join(homes["a"], "workspace"), 0o755)
	if err := os.WriteFile(filepath.Join(homes["a"], "workspace", "long.txt"), []byte(long.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	a := startServe(t, homes["a"], "MY_AGENT_ROUTES=fake:script:"+writeScript(t, `
- tool_calls:
    - id: call_long_read
      name: workspace_read
      arguments: {path: long.txt}
- text: "read it"
`))
	_, acc := postJSON(t, a.url+"/api/inbound", map[string]any{"text": "read long.txt"})
	id, _ := acc["conversation_id"].(string)
	if id == "" {
		t.Fatalf("inbound on a: %v", acc)
	}
	waitConv(t, a.url, id, "a's turn", settled)
	a.stop(t)
	if _, err := os.Stat(filepath.Join(homes["a"], "spill")); !os.IsNotExist(err) {
		t.Errorf("a kept a spill folder in its home (%v): the cut output belongs in the cluster", err)
	}

	// From the middle to the end (workspace_read numbered the lines, so
	// the output is longer than the file).
	const offset = 10000
	// The script answers by the conversation's model calls so far: a's
	// two come first.
	b := startServe(t, homes["b"], "MY_AGENT_ROUTES=fake:script:"+writeScript(t, fmt.Sprintf(`
- text: "a's first call"
- text: "a's second call"
- tool_calls:
    - id: call_read_again
      name: tool_output_read
      arguments: {call_id: call_long_read, offset: %d, limit: 50000}
- text: "read it again"
`, offset)))
	defer b.stop(t)
	_, acc = postJSON(t, b.url+"/api/inbound", map[string]any{"text": "and its end?"})
	if got, _ := acc["conversation_id"].(string); got != id {
		t.Fatalf("inbound on b went to %q, want a's conversation %s", got, id)
	}
	conv := waitConv(t, b.url, id, "b's turn", func(c convView) bool {
		return c.Status == "failed" || settled(c) && c.History[len(c.History)-1].Text == "read it again"
	})
	if conv.Status == "failed" {
		var runs any
		getJSON(t, b.url+"/api/conversations/"+id+"/runs", &runs)
		t.Fatalf("b's run failed: %v\n%s", runs, b.stderr)
	}
	var reread string
	for _, m := range conv.History {
		if m.Role == "tool" && strings.Contains(m.Text, "characters "+strconv.Itoa(offset)) {
			reread = m.Text
		}
	}
	if !strings.Contains(reread, "the end of the long file") {
		t.Errorf("b's tool_output_read of a's cut output: %q; history %+v", reread, conv.History)
	}
}
