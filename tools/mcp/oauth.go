package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/my-agent-crew/crew/events"
)

// OAuth for remote servers (MCP authorization, RFC 9728 protected-resource
// metadata, the authorization-code flow with PKCE). The owner logs in
// with crew mcp login (Login); the grant is kept in a 0600 file of the
// home's secret area (Server.TokenFile), which the running crew reads on
// each request, refreshes before the access token expires and writes back;
// crew mcp logout (Logout) revokes it and deletes the file. A server that
// answers 401 while no usable grant is stored needs login: its tools are
// not offered, and a call says so (NeedsLogin).

// OAuth is an entry's oauth: a client registered with the server's
// authorization server by hand (ClientID, ClientSecret), or nil: dynamic
// client registration where the authorization server offers it. Scopes,
// when set, are asked for instead of those the server names.
type OAuth struct {
	ClientID     string   `yaml:"client_id"`
	ClientSecret string   `yaml:"client_secret"`
	Scopes       []string `yaml:"scopes"`
}

// refreshEarly: an access token is refreshed this long before it expires,
// so that no request goes out with one about to lapse.
const refreshEarly = 60 * time.Second

// NeedsLogin is the failure of a server that asks for OAuth while no
// usable grant is stored: the owner runs crew mcp login. The model reads
// it as the server being unavailable.
type NeedsLogin struct{ Server string }

func (e NeedsLogin) Error() string {
	return fmt.Sprintf("MCP server %q is unavailable: needs login: run crew mcp login %s", e.Server, e.Server)
}

// Grant is what a login stored: the client, the endpoints and the token.
type Grant struct {
	Server        string           `json:"server"` // the URL logged in to
	ClientID      string           `json:"client_id"`
	ClientSecret  string           `json:"client_secret,omitempty"`
	TokenURL      string           `json:"token_url"`
	RevocationURL string           `json:"revocation_url,omitempty"`
	AuthStyle     oauth2.AuthStyle `json:"auth_style"`
	Scopes        []string         `json:"scopes,omitempty"`
	Token         *oauth2.Token    `json:"token"`
}

func (g *Grant) config() *oauth2.Config {
	return &oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret, Scopes: g.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: g.TokenURL, AuthStyle: g.AuthStyle}}
}

// teach adds the grant's secrets to r.
func (g *Grant) teach(r *events.Redactor, server string) {
	if r == nil || g == nil {
		return
	}
	r.Add("mcp_servers."+server+".oauth.client_secret", g.ClientSecret)
	if g.Token != nil {
		r.Add("mcp_servers."+server+".oauth.access_token", g.Token.AccessToken)
		r.Add("mcp_servers."+server+".oauth.refresh_token", g.Token.RefreshToken)
	}
}

// ReadGrant reads a stored grant; nil, nil when there is none.
func ReadGrant(path string) (*Grant, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var g Grant
	if err := json.Unmarshal(b, &g); err != nil || g.Token == nil {
		return nil, fmt.Errorf("%s is not a stored MCP login (%v): crew mcp login writes it again", path, err)
	}
	return &g, nil
}

// TeachGrant adds the secrets of the grant stored at path, if any, to r:
// the crew's redactor knows them before anything is logged.
func TeachGrant(path, server string, r *events.Redactor) {
	if g, _ := ReadGrant(path); g != nil {
		g.teach(r, server)
	}
}

// writeGrant stores g at path: mode 0600 in a 0700 folder, atomically.
func writeGrant(path string, g *Grant) error {
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".grant-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// oauthHandler is the running crew's side of a server's OAuth
// (auth.OAuthHandler for the SDK's transport): the stored grant as the
// bearer token, read again when the file changes, refreshed before
// expiry and written back; a 401 is "needs login".
type oauthHandler struct {
	name, path string
	secrets    *events.Redactor
	client     *http.Client
	clock      func() time.Time

	mu    sync.Mutex
	seen  time.Time // the file's modification time when last read
	size  int64
	grant *Grant // nil: not logged in
}

func (h *oauthHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.loadLocked() == nil {
		return nil, nil
	}
	return h, nil
}

// loggedIn: a grant is stored.
func (h *oauthHandler) loggedIn() bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.loadLocked() != nil
}

// mark notes the file as it is now: changed reports a login since.
func (h *oauthHandler) mark() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.loadLocked()
}

// changed: the file differs from its last read (a login or logout since).
func (h *oauthHandler) changed() bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	fi, err := os.Stat(h.path)
	if err != nil {
		return !h.seen.IsZero()
	}
	return !fi.ModTime().Equal(h.seen) || fi.Size() != h.size
}

// loadLocked reads the file again when it changed since the last read.
func (h *oauthHandler) loadLocked() *Grant {
	fi, err := os.Stat(h.path)
	if err != nil {
		h.grant, h.seen, h.size = nil, time.Time{}, 0
		return nil
	}
	if fi.ModTime().Equal(h.seen) && fi.Size() == h.size {
		return h.grant
	}
	g, err := ReadGrant(h.path)
	if err != nil {
		g = nil
	}
	h.grant, h.seen, h.size = g, fi.ModTime(), fi.Size()
	g.teach(h.secrets, h.name)
	return g
}

// Token is the stored access token, refreshed first when it expires
// within refreshEarly.
func (h *oauthHandler) Token() (*oauth2.Token, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.loadLocked()
	if g == nil {
		return nil, &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "not logged in"}
	}
	if g.Token.Expiry.IsZero() || g.Token.Expiry.Sub(h.clock()) > refreshEarly || g.Token.RefreshToken == "" {
		return g.Token, nil
	}
	return h.refreshLocked(g)
}

// refreshLocked trades the refresh token for a new access token and
// stores it, unless the file changed meanwhile (a logout, a new login).
func (h *oauthHandler) refreshLocked(g *Grant) (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	ctx = context.WithValue(ctx, oauth2.HTTPClient, h.client)
	t, err := g.config().TokenSource(ctx, &oauth2.Token{RefreshToken: g.Token.RefreshToken}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return nil, &oauth2.RetrieveError{Response: re.Response, ErrorCode: "invalid_grant", ErrorDescription: re.ErrorDescription}
		}
		return nil, fmt.Errorf("could not refresh the OAuth token of MCP server %q: %v", h.name, oneLine(err))
	}
	if t.RefreshToken == "" {
		t.RefreshToken = g.Token.RefreshToken
	}
	next := *g
	next.Token = t
	next.teach(h.secrets, h.name)
	if fi, err := os.Stat(h.path); err != nil || !fi.ModTime().Equal(h.seen) || fi.Size() != h.size {
		return t, nil // logged out or in again meanwhile: theirs wins
	}
	if err := writeGrant(h.path, &next); err != nil {
		return nil, fmt.Errorf("store the refreshed OAuth token of MCP server %q: %v", h.name, err)
	}
	if fi, err := os.Stat(h.path); err == nil {
		h.seen, h.size = fi.ModTime(), fi.Size()
	}
	h.grant = &next
	return t, nil
}

// Authorize is called on a 401 or 403: with a refresh token the grant is
// refreshed once (a token the server stopped taking); otherwise the server
// needs login. A 403 other than insufficient_scope is the server's own
// refusal, left to the call.
func (h *oauthHandler) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	chal, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if resp.StatusCode == http.StatusForbidden && !hasError(chal, "insufficient_scope") {
		return fmt.Errorf("MCP server %q refused the request: 403 Forbidden", h.name)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.loadLocked()
	if g == nil && !bearer(chal) {
		return fmt.Errorf("MCP server %q answered %s and asks for no OAuth login: check the entry's headers", h.name, resp.Status)
	}
	if g != nil && g.Token.RefreshToken != "" && resp.StatusCode == http.StatusUnauthorized && !hasError(chal, "insufficient_scope") {
		if _, err := h.refreshLocked(g); err == nil {
			return nil // the SDK sends the request once more
		}
	}
	return NeedsLogin{Server: h.name}
}

func bearer(cs []oauthex.Challenge) bool {
	for _, c := range cs {
		if c.Scheme == "bearer" {
			return true
		}
	}
	return false
}

func hasError(cs []oauthex.Challenge, code string) bool {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params["error"] == code {
			return true
		}
	}
	return false
}

// Login runs the authorization-code flow with PKCE for srv (the SDK's
// auth.AuthorizationCodeHandler: discovery from the server's 401,
// registration, the code exchange) and stores the grant at
// srv.TokenFile. The browser is sent to a callback on 127.0.0.1 of a port
// of its own: open is told the URL to open (nothing is started here); a
// callback whose state is not this login's is refused and the login goes
// on waiting, until ctx ends.
func Login(ctx context.Context, srv Server, client *http.Client, open func(url string)) (*Grant, error) {
	if srv.URL == "" {
		return nil, fmt.Errorf("MCP server %q is a stdio server: only a remote (url) server logs in", srv.Name)
	}
	if srv.TokenFile == "" {
		return nil, fmt.Errorf("MCP server %q has nowhere to keep a login", srv.Name)
	}
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	req, resp, err := probe(ctx, srv, client)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		return nil, fmt.Errorf("MCP server %q answered %s without asking for a login: it needs no OAuth", srv.Name, resp.Status)
	}
	chal, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: its WWW-Authenticate header: %v", srv.Name, err)
	}
	asm, err := authServer(ctx, srv, chal, client)
	if err != nil {
		return nil, err
	}
	cb, err := listenCallback()
	if err != nil {
		return nil, err
	}
	defer cb.close()
	var got *Grant
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         cb.url,
		RequestRefreshToken: true,
		Client:              client,
		AuthorizationCodeFetcher: func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return cb.wait(ctx, a.URL, open)
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			got = &Grant{Server: srv.URL, ClientID: c.ClientID, ClientSecret: c.ClientSecret, TokenURL: c.Endpoint.TokenURL,
				RevocationURL: asm.RevocationEndpoint, AuthStyle: c.Endpoint.AuthStyle, Scopes: c.Scopes, Token: t}
			return oauth2.StaticTokenSource(t), nil
		},
	}
	switch o := srv.OAuth; {
	case o != nil && o.ClientID != "":
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.ClientID}
		if o.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
		}
	case asm.RegistrationEndpoint == "":
		return nil, fmt.Errorf("the authorization server of MCP server %q (%s) offers no dynamic client registration: register a client there and set mcp_servers.%s.oauth.client_id", srv.Name, asm.Issuer, srv.Name)
	default:
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{cb.url}, ClientName: "my-agent-crew", TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}}
	}
	if o := srv.OAuth; o != nil && len(o.Scopes) > 0 {
		cfg.ScopeFilter = func([]string) []string { return o.Scopes }
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: %v", srv.Name, err)
	}
	if err := h.Authorize(ctx, req, resp); err != nil {
		return nil, fmt.Errorf("login to MCP server %q failed: %v", srv.Name, oneLine(err))
	}
	if got == nil || got.Token == nil || got.Token.AccessToken == "" {
		return nil, fmt.Errorf("login to MCP server %q failed: no access token came back", srv.Name)
	}
	if err := writeGrant(srv.TokenFile, got); err != nil {
		return nil, fmt.Errorf("store the login to MCP server %q: %w", srv.Name, err)
	}
	return got, nil
}

// probe sends an initialize request without a token, as the SDK would.
func probe(ctx context.Context, srv Server, client *http.Client) (*http.Request, *http.Response, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + protocol + `","capabilities":{},"clientInfo":{"name":"my-agent-crew","version":"login"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range srv.Headers {
		if !strings.EqualFold(k, "Authorization") {
			req.Header.Set(k, v)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("MCP server %q (%s) is not answering: %v", srv.Name, events.RedactURL(srv.URL), oneLine(err))
	}
	return req, resp, nil
}

// authServer finds the server's authorization server from its 401: the
// protected-resource metadata it names (or the well-known one) and the
// authorization server's metadata.
func authServer(ctx context.Context, srv Server, chal []oauthex.Challenge, client *http.Client) (*oauthex.AuthServerMeta, error) {
	var metas []string
	for _, c := range chal {
		if u := c.Params["resource_metadata"]; u != "" {
			metas = append(metas, u)
		}
	}
	if u, err := url.Parse(srv.URL); err == nil {
		u.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/")
		u.RawQuery = ""
		metas = append(metas, u.String())
	}
	var why error
	for _, m := range metas {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, m, srv.URL, client)
		if err != nil || prm == nil {
			why = cmpErr(err, why)
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("MCP server %q: its protected-resource metadata names no authorization server", srv.Name)
		}
		asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], client)
		if err != nil || asm == nil {
			return nil, fmt.Errorf("MCP server %q: the metadata of its authorization server %s: %v", srv.Name, prm.AuthorizationServers[0], cmpErr(err, errors.New("none found")))
		}
		return asm, nil
	}
	return nil, fmt.Errorf("MCP server %q answered 401 but offers no protected-resource metadata (RFC 9728) to log in with: %v", srv.Name, cmpErr(why, errors.New("none found")))
}

func cmpErr(err, or error) error {
	if err != nil {
		return err
	}
	return or
}

// callback is the loopback listener the browser is sent back to.
type callback struct {
	url  string
	srv  *http.Server
	mu   sync.Mutex
	want string // the state of the login under way
	got  chan *auth.AuthorizationResult
	bad  chan error
}

func listenCallback() (*callback, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the login's callback on 127.0.0.1: %w", err)
	}
	cb := &callback{url: "http://" + ln.Addr().String() + "/callback", got: make(chan *auth.AuthorizationResult, 1), bad: make(chan error, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", cb.serve)
	cb.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go cb.srv.Serve(ln)
	return cb, nil
}

func (cb *callback) close() { cb.srv.Close() }

// serve answers the browser: a callback of another state is refused (and
// the login keeps waiting); an error from the authorization server ends it.
func (cb *callback) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cb.mu.Lock()
	want := cb.want
	cb.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if want == "" || len(q.Get("state")) != len(want) || q.Get("state") != want {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "Refused: this callback's state is not the one of the login under way.\n")
		return
	}
	if e := q.Get("error"); e != "" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "The authorization server refused the login: %s.\n", e)
		select {
		case cb.bad <- fmt.Errorf("the authorization server refused the login: %s %s", e, q.Get("error_description")):
		default:
		}
		return
	}
	select {
	case cb.got <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}:
		io.WriteString(w, "Logged in: you can close this tab; crew mcp login finishes in the terminal.\n")
	default:
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, "This login has already had its callback.\n")
	}
}

// wait tells open where to go and waits for the callback of that state.
func (cb *callback) wait(ctx context.Context, authURL string, open func(string)) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(authURL)
	if err != nil || u.Query().Get("state") == "" {
		return nil, fmt.Errorf("the authorization URL has no state: %q", authURL)
	}
	cb.mu.Lock()
	cb.want = u.Query().Get("state")
	cb.mu.Unlock()
	open(authURL)
	select {
	case r := <-cb.got:
		return r, nil
	case err := <-cb.bad:
		return nil, err
	case <-ctx.Done():
		return nil, fmt.Errorf("no login came back to %s in time: %w", cb.url, ctx.Err())
	}
}

// Logout revokes the stored grant where the authorization server offers
// revocation (RFC 7009: the refresh token, then the access token) and
// deletes it. revoked says whether the server took the revocation; the
// grant is deleted either way.
func Logout(ctx context.Context, srv Server, client *http.Client) (revoked bool, err error) {
	g, err := ReadGrant(srv.TokenFile)
	if err != nil {
		os.Remove(srv.TokenFile)
		return false, err
	}
	if g == nil {
		return false, fmt.Errorf("MCP server %q is not logged in (no %s)", srv.Name, srv.TokenFile)
	}
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	var why error
	if g.RevocationURL != "" {
		revoked = true
		for _, t := range []struct{ value, hint string }{{g.Token.RefreshToken, "refresh_token"}, {g.Token.AccessToken, "access_token"}} {
			if t.value == "" {
				continue
			}
			if err := revoke(ctx, client, g, t.value, t.hint); err != nil {
				revoked, why = false, err
			}
		}
	}
	if err := os.Remove(srv.TokenFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return revoked, err
	}
	if why != nil {
		return false, fmt.Errorf("the login is deleted here, but revoking it at %s failed: %v", g.RevocationURL, why)
	}
	return revoked, nil
}

func revoke(ctx context.Context, client *http.Client, g *Grant, token, hint string) error {
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	basic := g.ClientSecret != "" && g.AuthStyle != oauth2.AuthStyleInParams
	if !basic {
		form.Set("client_id", g.ClientID)
		if g.ClientSecret != "" {
			form.Set("client_secret", g.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.RevocationURL, bytes.NewBufferString(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(g.ClientID), url.QueryEscape(g.ClientSecret))
	}
	resp, err := client.Do(req)
	if err != nil {
		return errors.New(oneLine(err))
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	return nil
}

// LoggedIn is what the owner is told once a login's browser came back:
// where the grant is kept and how long it holds. No token is shown.
func (g *Grant) LoggedIn(srv Server) string {
	expires := "does not expire"
	if g.Token != nil && !g.Token.Expiry.IsZero() {
		expires = "expires " + g.Token.Expiry.UTC().Format(time.RFC3339)
		if g.Token.RefreshToken != "" {
			expires += ", refreshed before then"
		}
	}
	return fmt.Sprintf("logged in to %s: the token (%s) is kept in %s (mode 600); a running crew serve uses it from its next request", srv.Name, expires, srv.TokenFile)
}

// LoggedOut is what the owner is told once Logout of the server name is
// done; revoked is what Logout returned.
func LoggedOut(name string, revoked bool) string {
	how := "deleted here (its authorization server offers no revocation)"
	if revoked {
		how = "revoked at its authorization server and deleted here"
	}
	return fmt.Sprintf("logged out of %s: the token is %s; its tools need login again", name, how)
}
