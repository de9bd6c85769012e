package mcp

import (
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// crew mcp login and logout tell the owner what Grant.LoggedIn and
// LoggedOut say: where the grant is kept and how long it holds, never the
// token; whether the logout was revoked at the server.
func TestLoggedInAndOutSay(t *testing.T) {
	srv := Server{Name: "secure", TokenFile: "/h/secrets/mcp/secure.json"}
	at := time.Date(2026, 12, 3, 8, 0, 0, 0, time.FixedZone("x", 3600))
	for _, tc := range []struct {
		tok  *oauth2.Token
		want string
	}{
		{&oauth2.Token{AccessToken: "tok_secret"}, "logged in to secure: the token (does not expire) is kept in /h/secrets/mcp/secure.json (mode 600); a running crew serve uses it from its next request"},
		{&oauth2.Token{AccessToken: "tok_secret", Expiry: at}, "logged in to secure: the token (expires 2026-12-03T07:00:00Z) is kept in /h/secrets/mcp/secure.json (mode 600); a running crew serve uses it from its next request"},
		{&oauth2.Token{AccessToken: "tok_secret", RefreshToken: "ref_secret", Expiry: at}, "logged in to secure: the token (expires 2026-12-03T07:00:00Z, refreshed before then) is kept in /h/secrets/mcp/secure.json (mode 600); a running crew serve uses it from its next request"},
	} {
		if got := (&Grant{Token: tc.tok}).LoggedIn(srv); got != tc.want {
			t.Errorf("LoggedIn = %q\nwant       %q", got, tc.want)
		}
	}
	if got, want := LoggedOut("secure", true), "logged out of secure: the token is revoked at its authorization server and deleted here; its tools need login again"; got != want {
		t.Errorf("LoggedOut(revoked) = %q, want %q", got, want)
	}
	if got, want := LoggedOut("secure", false), "logged out of secure: the token is deleted here (its authorization server offers no revocation); its tools need login again"; got != want {
		t.Errorf("LoggedOut = %q, want %q", got, want)
	}
}
