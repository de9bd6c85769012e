// Package oauthtest is a small OAuth authorization server and an MCP
// server behind it, both on 127.0.0.1, for the tests of crew mcp login:
// the MCP server answers 401 with protected-resource metadata (RFC 9728)
// until a request carries a token the authorization server issued, has
// not expired and was not revoked; the authorization server offers
// dynamic client registration (RFC 7591, unless NoRegistration), the
// authorization-code grant with PKCE S256 only, refresh tokens and
// revocation (RFC 7009). Browse plays the browser: it follows the
// authorization URL (approved at once) back to the login's callback.
package oauthtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Options shape the servers.
type Options struct {
	TokenLife      time.Duration // of an access token; 0: an hour
	NoRegistration bool          // no dynamic client registration: only ClientID
	ClientID       string        // a client registered by hand (with ClientSecret, if set)
	ClientSecret   string
}

// Server is the authorization server (URL) and the MCP server (MCP, its
// endpoint) behind it.
type Server struct {
	URL, MCP string
	opts     Options

	mu        sync.Mutex
	clients   map[string][]string // client id → redirect URIs
	codes     map[string]grant
	access    map[string]time.Time // access token → expiry
	refresh   map[string]string    // refresh token → client id
	revoked   map[string]bool
	issued    []string // access tokens, in order
	refreshes int
	registers int
	calls     []string // the token each tool call came with
	badAuth   []string // why requests were refused
}

type grant struct {
	client, redirect, challenge, resource string
}

// Start starts both servers until the test ends.
func Start(t testing.TB, opts Options) *Server {
	s := &Server{opts: opts, clients: map[string][]string{}, codes: map[string]grant{}, access: map[string]time.Time{},
		refresh: map[string]string{}, revoked: map[string]bool{}}
	if opts.TokenLife == 0 {
		s.opts.TokenLife = time.Hour
	}
	if opts.ClientID != "" {
		s.clients[opts.ClientID] = nil // any loopback redirect
	}
	as := httptest.NewServer(s.authMux())
	t.Cleanup(as.Close)
	s.URL = as.URL

	mux := http.NewServeMux()
	mcpSrv := httptest.NewServer(mux)
	t.Cleanup(mcpSrv.Close)
	s.MCP = mcpSrv.URL + "/mcp"
	prmURL := mcpSrv.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: s.MCP, AuthorizationServers: []string{s.URL}, ScopesSupported: []string{"tools"},
	}))
	server := sdk.NewServer(&sdk.Implementation{Name: "oauth-protected", Version: "1"}, nil)
	type echoArgs struct {
		Text string `json:"text"`
	}
	sdk.AddTool(server, &sdk.Tool{Name: "echo", Description: "Says the text back, only to a logged-in client.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, a echoArgs) (*sdk.CallToolResult, any, error) {
			tok := ""
			if ti := req.Extra.TokenInfo; ti != nil {
				tok, _ = ti.Extra["token"].(string)
			}
			s.mu.Lock()
			s.calls = append(s.calls, tok)
			s.mu.Unlock()
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "protected echo: " + a.Text}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil)
	mux.Handle("/mcp", auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prmURL})(h))
	return s
}

func (s *Server) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.access[token]
	switch {
	case !ok:
		s.badAuth = append(s.badAuth, "unknown token")
		return nil, auth.ErrInvalidToken
	case s.revoked[token]:
		s.badAuth = append(s.badAuth, "revoked token")
		return nil, auth.ErrInvalidToken
	case time.Now().After(exp):
		s.badAuth = append(s.badAuth, "expired token")
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Expiration: exp, Scopes: []string{"tools"}, Extra: map[string]any{"token": token}}, nil
}

func (s *Server) authMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		meta := map[string]any{
			"issuer": s.URL, "authorization_endpoint": s.URL + "/authorize", "token_endpoint": s.URL + "/token",
			"revocation_endpoint": s.URL + "/revoke", "response_types_supported": []string{"code"},
			"grant_types_supported": []string{"authorization_code", "refresh_token"}, "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none", "client_secret_post"}, "scopes_supported": []string{"tools", "offline_access"},
		}
		if !s.opts.NoRegistration {
			meta["registration_endpoint"] = s.URL + "/register"
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(meta)
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		if s.opts.NoRegistration {
			http.NotFound(w, r)
			return
		}
		var m oauthex.ClientRegistrationMetadata
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || len(m.RedirectURIs) == 0 {
			oauthError(w, http.StatusBadRequest, "invalid_client_metadata")
			return
		}
		for _, u := range m.RedirectURIs {
			if p, err := url.Parse(u); err != nil || p.Scheme != "http" || p.Hostname() != "127.0.0.1" {
				oauthError(w, http.StatusBadRequest, "invalid_redirect_uri")
				return
			}
		}
		id := "dyn-" + rand.Text()
		s.mu.Lock()
		s.clients[id] = m.RedirectURIs
		s.registers++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"client_id": id, "redirect_uris": m.RedirectURIs, "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		s.mu.Lock()
		uris, known := s.clients[q.Get("client_id")]
		s.mu.Unlock()
		redirect := q.Get("redirect_uri")
		ru, err := url.Parse(redirect)
		switch {
		case !known:
			http.Error(w, "unknown client", http.StatusBadRequest)
			return
		case err != nil || ru.Hostname() != "127.0.0.1" || (uris != nil && !slices.Contains(uris, redirect)):
			http.Error(w, "redirect_uri not registered", http.StatusBadRequest)
			return
		case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "":
			http.Error(w, "want response_type=code, PKCE S256 and a state", http.StatusBadRequest)
			return
		}
		code := "code-" + rand.Text()
		s.mu.Lock()
		s.codes[code] = grant{client: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge"), resource: q.Get("resource")}
		s.mu.Unlock()
		back := ru.Query()
		back.Set("code", code)
		back.Set("state", q.Get("state"))
		ru.RawQuery = back.Encode()
		http.Redirect(w, r, ru.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		client := r.PostForm.Get("client_id")
		if id, secret, ok := r.BasicAuth(); ok {
			client = id
			if secret != s.opts.ClientSecret {
				oauthError(w, http.StatusUnauthorized, "invalid_client")
				return
			}
		} else if s.opts.ClientSecret != "" && client == s.opts.ClientID && r.PostForm.Get("client_secret") != s.opts.ClientSecret {
			oauthError(w, http.StatusUnauthorized, "invalid_client")
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			g, ok := s.codes[r.PostForm.Get("code")]
			delete(s.codes, r.PostForm.Get("code")) // one use
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if !ok || g.client != client || g.redirect != r.PostForm.Get("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
				oauthError(w, http.StatusBadRequest, "invalid_grant")
				return
			}
		case "refresh_token":
			rt := r.PostForm.Get("refresh_token")
			if c, ok := s.refresh[rt]; !ok || c != client || s.revoked[rt] {
				oauthError(w, http.StatusBadRequest, "invalid_grant")
				return
			}
			s.refreshes++
		default:
			oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
			return
		}
		at, rt := "at-"+rand.Text()+rand.Text(), "rt-"+rand.Text()+rand.Text()
		s.access[at] = time.Now().Add(s.opts.TokenLife)
		s.refresh[rt] = client
		s.issued = append(s.issued, at)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt,
			"expires_in": int(s.opts.TokenLife / time.Second), "scope": "tools"})
	})
	mux.HandleFunc("POST /revoke", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		tok := r.PostForm.Get("token")
		s.mu.Lock()
		defer s.mu.Unlock()
		s.revoked[tok] = true
		if c, ok := s.refresh[tok]; ok { // a refresh token's access tokens go with it
			_ = c
			for at := range s.access {
				s.revoked[at] = true
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	return mux
}

func oauthError(w http.ResponseWriter, code int, e string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"error":%q}`, e)
}

// Browse is the owner's browser: it opens the authorization URL, which
// approves at once, and follows the redirect to the login's callback; it
// returns the callback's status and text.
func Browse(authURL string) (int, string, error) {
	resp, err := http.Get(authURL)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(b), nil
}

// Issued are the access tokens issued so far, oldest first.
func (s *Server) Issued() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.issued)
}

// Secrets are every access and refresh token issued so far.
func (s *Server) Secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.issued)
	for rt := range s.refresh {
		out = append(out, rt)
	}
	return out
}

// Refreshes counts refresh-token grants; Registrations dynamic ones.
func (s *Server) Refreshes() int     { s.mu.Lock(); defer s.mu.Unlock(); return s.refreshes }
func (s *Server) Registrations() int { s.mu.Lock(); defer s.mu.Unlock(); return s.registers }

// Expire makes every access token issued so far expired: the MCP server
// refuses them from now on.
func (s *Server) Expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for at := range s.access {
		s.access[at] = time.Now().Add(-time.Second)
	}
}

// Revoked reports whether token was revoked.
func (s *Server) Revoked(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.revoked[token]
}

// Calls are the access tokens the tool calls came with.
func (s *Server) Calls() []string { s.mu.Lock(); defer s.mu.Unlock(); return slices.Clone(s.calls) }

// Refused says why requests were refused so far.
func (s *Server) Refused() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.badAuth, ", ")
}
