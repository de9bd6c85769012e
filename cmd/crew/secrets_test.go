package main

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
)

// After start the server removes the secret-named variables from its own
// environment; the others stay.
func TestServeDropsSecretVariables(t *testing.T) {
	environ := []string{"PATH=/bin", "OPENROUTER_API_KEY=sk-or-12345678", "TELEGRAM_BOT_TOKEN=1:abcdefgh", "db_password=x", "HOME=/h", "MY_SECRET=s"}
	var unset []string
	dropSecretEnv(&cliEnv{environ: func() []string { return environ }, unsetenv: func(k string) error { unset = append(unset, k); return nil }})
	slices.Sort(unset)
	if want := []string{"MY_SECRET", "OPENROUTER_API_KEY", "TELEGRAM_BOT_TOKEN", "db_password"}; !slices.Equal(unset, want) {
		t.Errorf("unset %v, want %v", unset, want)
	}
}

// Every <home>/env value is a secret but the address and route settings.
func TestEnvFileValuesAreSecrets(t *testing.T) {
	h := &home.Home{Env: map[string]string{
		"CREW_AUTH_TOKEN": "tok-0123456789", "ANYTHING": "plain-value",
		"OLLAMA_HOST": "http://127.0.0.1:11434", "OPENROUTER_BASE_URL": "https://user:pw@proxy.example/v1",
	}}
	loadSecrets(&cliEnv{}, h)
	r := events.Secrets()
	for in, want := range map[string]string{
		"tok-0123456789":                   "[redacted:CREW_AUTH_TOKEN]",
		"plain-value":                      "[redacted:ANYTHING]",
		"http://127.0.0.1:11434":           "http://127.0.0.1:11434",
		"https://user:pw@proxy.example/v1": "[redacted:OPENROUTER_BASE_URL]",
	} {
		if got := r.String(in); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
}

// The server's log is redacted: an error that quotes a secret is logged
// with the mark (R-SEC-3).
func TestServerLogIsRedacted(t *testing.T) {
	secret := "sk-test-logged-0123456789"
	events.Secrets().Add("LOGGED_API_KEY", secret)
	var out bytes.Buffer
	logger := slog.New(slog.NewTextHandler(redactedWriter{&out}, nil))
	logger.Error("model failed: key "+secret+" refused", "err", "401 for "+secret, "visible", "marker")
	if !strings.Contains(out.String(), "marker") || !strings.Contains(out.String(), "[redacted:LOGGED_API_KEY]") {
		t.Fatalf("log = %q", out.String())
	}
	if strings.Contains(out.String(), secret) {
		t.Errorf("the log holds the secret: %q", out.String())
	}
}

// config.yaml's auth_token is redacted too.
func TestConfigSecretsAreRedacted(t *testing.T) {
	h := &home.Home{Env: map[string]string{}, Config: &home.Config{AuthToken: "cfg-token-0123456789"}}
	loadSecrets(&cliEnv{}, h)
	if got := events.Secrets().String("token cfg-token-0123456789"); got != "token [redacted:auth_token]" {
		t.Errorf("got %q", got)
	}
}
