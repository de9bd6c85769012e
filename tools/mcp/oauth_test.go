package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/mcp/oauthtest"
)

// browse plays the owner's browser for Login: a callback carrying another
// state (the authorization server's redirect of a tampered URL) is refused
// and the login goes on; then the real URL logs in.
func browse(t *testing.T, opened chan<- string) func(string) {
	return func(authURL string) {
		go func() {
			u, _ := url.Parse(authURL)
			q := u.Query()
			q.Set("state", strings.Repeat("x", len(q.Get("state"))))
			u.RawQuery = q.Encode()
			if code, body, err := oauthtest.Browse(u.String()); err != nil || code != 400 || !strings.Contains(body, "Refused") {
				t.Errorf("a callback with a wrong state: %d %q %v, want 400 refused", code, body, err)
			}
			if code, body, err := oauthtest.Browse(authURL); err != nil || code != 200 || !strings.Contains(body, "Logged in") {
				t.Errorf("the callback: %d %q %v", code, body, err)
			}
			opened <- authURL
		}()
	}
}

func callEcho(t *testing.T, p *Pool, text string) tools.Result {
	t.Helper()
	tool, ok := p.Lookup(context.Background(), []string{"secure"}, "mcp__secure__echo")
	if !ok {
		t.Fatal("mcp__secure__echo: not found at all")
	}
	args, _ := json.Marshal(map[string]string{"text": text})
	if c, ok := tool.(interface {
		Check(tools.Env, json.RawMessage) error
	}); ok {
		if err := c.Check(tools.Env{}, args); err != nil {
			return tools.Result{Output: err.Error(), IsError: true}
		}
	}
	res, err := tool.Run(context.Background(), tools.Env{}, args)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Issue 31 item 2: a server that answers 401 with protected-resource
// metadata needs login (its tools not offered, a call told the server is
// unavailable, the state "needs login: run crew mcp login <name>"); Login
// registers dynamically, runs the code flow with PKCE through a loopback
// callback that refuses another state, and stores the grant 0600; the
// pool picks it up without a restart; the token is refreshed before it
// expires and written back; Logout revokes it and deletes it, and the
// server needs login again. Every token is known to the redactor.
func TestOAuthLoginRefreshLogout(t *testing.T) {
	as := oauthtest.Start(t, oauthtest.Options{})
	file := filepath.Join(t.TempDir(), "secrets", "mcp", "secure.json")
	srv := Server{Name: "secure", URL: as.MCP, TokenFile: file}
	var ahead atomic.Int64
	r := events.NewRedactor()
	p := NewPool(PoolConfig{Version: "t", Secrets: r})
	p.clock = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	p.Configure([]Server{srv})
	defer p.Close()
	ctx := context.Background()

	list, probs := p.Tools(ctx, []string{"secure"})
	if len(list) != 0 || len(probs) != 1 || !strings.Contains(probs[0].Error(), `MCP server "secure" is unavailable: needs login: run crew mcp login secure`) {
		t.Fatalf("before login: tools %v, problems %v", list, probs)
	}
	if st := p.States()[0]; st.State != "needs login" || st.Error != "needs login: run crew mcp login secure" {
		t.Fatalf("state before login: %+v", st)
	}
	if st := p.Status(ctx)[0]; st.Transport != "streamable HTTP" || !errors.As(st.Err, new(NeedsLogin)) || st.LoggedIn {
		t.Fatalf("doctor's status before login: %+v", st)
	}
	if res := callEcho(t, p, "hi"); !res.IsError || !strings.Contains(res.Output, "unavailable") || !strings.Contains(res.Output, "not run") {
		t.Fatalf("a call before login: %+v", res)
	}

	opened := make(chan string, 1)
	g, err := Login(ctx, srv, nil, browse(t, opened))
	if err != nil {
		t.Fatal(err)
	}
	<-opened
	if as.Registrations() != 1 || g.ClientID == "" || g.RevocationURL == "" {
		t.Fatalf("registrations %d, grant %+v", as.Registrations(), g)
	}
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	if di, _ := os.Stat(filepath.Dir(file)); di.Mode().Perm() != 0o700 {
		t.Errorf("token folder mode %04o", di.Mode().Perm())
	}
	first := as.Issued()[0]

	if res := callEcho(t, p, "hi"); res.IsError || !strings.Contains(res.Output, "protected echo: hi") {
		t.Fatalf("after login: %+v (refused: %s)", res, as.Refused())
	}
	if c := as.Calls(); c[len(c)-1] != first {
		t.Fatalf("the call came without the login's token")
	}
	if st := p.States()[0]; st.State != "running" {
		t.Errorf("state after login: %+v", st)
	}
	if st := p.Status(ctx)[0]; st.Err != nil || !st.LoggedIn || len(st.Tools) != 1 {
		t.Errorf("doctor's status after login: %+v", st)
	}

	// The token lapses: the crew refreshes it first (its clock an hour on,
	// the server refusing the old one).
	as.Expire()
	ahead.Store(int64(time.Hour))
	if res := callEcho(t, p, "again"); res.IsError || !strings.Contains(res.Output, "protected echo: again") {
		t.Fatalf("after expiry: %+v (refused: %s)", res, as.Refused())
	}
	second := as.Issued()[1]
	if as.Refreshes() != 1 || as.Calls()[len(as.Calls())-1] != second {
		t.Fatalf("refreshes %d, issued %d", as.Refreshes(), len(as.Issued()))
	}
	stored, _ := ReadGrant(file)
	if stored.Token.AccessToken != second {
		t.Fatal("the refreshed token was not written back")
	}
	for _, tok := range []string{first, second, stored.Token.RefreshToken} {
		if tok == "" || strings.Contains(r.String("x "+tok+" y"), tok) {
			t.Errorf("the redactor does not know a token")
		}
	}

	revoked, err := Logout(ctx, srv, nil)
	if err != nil || !revoked {
		t.Fatalf("logout: %v %v", revoked, err)
	}
	if !as.Revoked(second) || !as.Revoked(stored.Token.RefreshToken) {
		t.Error("the tokens were not revoked")
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the token file is still there: %v", err)
	}
	if res := callEcho(t, p, "after"); !res.IsError || !strings.Contains(res.Output, "needs login: run crew mcp login secure") {
		t.Fatalf("a call after logout: %+v", res)
	}
	if st := p.States()[0]; st.State != "needs login" {
		t.Errorf("state after logout: %+v", st)
	}
	if list, _ := p.Tools(ctx, []string{"secure"}); len(list) != 0 {
		t.Errorf("tools offered after logout: %v", list)
	}
	if _, err := Logout(ctx, srv, nil); err == nil || !strings.Contains(err.Error(), "not logged in") {
		t.Errorf("a second logout: %v", err)
	}
}

// A client registered by hand (oauth.client_id, client_secret) logs in
// without registration; without one, an authorization server that offers
// no registration is refused, naming the key to set.
func TestOAuthLoginWithAConfiguredClient(t *testing.T) {
	as := oauthtest.Start(t, oauthtest.Options{NoRegistration: true, ClientID: "crew-by-hand", ClientSecret: "s3cret-of-the-client-by-hand"})
	file := filepath.Join(t.TempDir(), "secure.json")
	srv := Server{Name: "secure", URL: as.MCP, TokenFile: file}
	if _, err := Login(context.Background(), srv, nil, func(string) { t.Error("a URL was offered") }); err == nil || !strings.Contains(err.Error(), "mcp_servers.secure.oauth.client_id") {
		t.Fatalf("no registration, no client id: %v", err)
	}
	srv.OAuth = &OAuth{ClientID: "crew-by-hand", ClientSecret: "s3cret-of-the-client-by-hand", Scopes: []string{"tools"}}
	opened := make(chan string, 1)
	g, err := Login(context.Background(), srv, nil, browse(t, opened))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(<-opened)
	if u.Query().Get("client_id") != "crew-by-hand" || !slices.Equal(slices.Sorted(slices.Values(strings.Fields(u.Query().Get("scope")))), []string{"offline_access", "tools"}) || u.Query().Get("code_challenge_method") != "S256" {
		t.Errorf("authorization URL %s", u)
	}
	if g.ClientID != "crew-by-hand" || as.Registrations() != 0 {
		t.Errorf("grant %+v, registrations %d", g, as.Registrations())
	}
	p := NewPool(PoolConfig{Version: "t", Servers: []Server{srv}})
	defer p.Close()
	if res := callEcho(t, p, "hand"); res.IsError || !strings.Contains(res.Output, "protected echo: hand") {
		t.Fatalf("%+v (%s)", res, as.Refused())
	}
}

// A server that needs no login says so instead of starting one.
func TestOAuthLoginRefusedWhereNoneIsAsked(t *testing.T) {
	g := newGoServer(t)
	_, err := Login(context.Background(), Server{Name: "open", URL: g.url(), TokenFile: filepath.Join(t.TempDir(), "x.json")}, nil, func(string) { t.Error("a URL was offered") })
	if err == nil || !strings.Contains(err.Error(), "needs no OAuth") {
		t.Fatalf("err = %v", err)
	}
}
