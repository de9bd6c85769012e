package home

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
)

func authHome(t *testing.T, config, envFile string) *Home {
	t.Helper()
	dir := t.TempDir()
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	if config != "" {
		f, _ := os.OpenFile(filepath.Join(dir, "config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("\n" + config + "\n")
		f.Close()
	}
	if envFile != "" {
		f, _ := os.OpenFile(filepath.Join(dir, "env"), os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(envFile + "\n")
		f.Close()
	}
	h, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func noEnv(string) string { return "" }

// Item 2: a non-loopback listen without a token writes a strong one to
// <home>/env (0600, other lines kept, before anything else reads the
// file) and says where it is and where to log in, never the token.
func TestNonLoopbackListenGeneratesToken(t *testing.T) {
	h := authHome(t, "", "OPENROUTER_API_KEY=sk-test")
	token, generated, err := h.ServeAuth(events.NewRedactor(), "0.0.0.0:7420", noEnv)
	if err != nil || !generated {
		t.Fatalf("ServeAuth = %v %v", generated, err)
	}
	if err := web.CheckToken(token); err != nil {
		t.Errorf("generated token is weak: %v", err)
	}
	vars, err := ReadEnvFile(filepath.Join(h.Dir, "env"))
	if err != nil || vars[AuthTokenVar] != token || vars["OPENROUTER_API_KEY"] != "sk-test" || vars[AuditKeyVar] == "" {
		t.Errorf("env after = %v, %v", vars, err)
	}
	if fi, _ := os.Stat(filepath.Join(h.Dir, "env")); fi.Mode().Perm() != 0o600 {
		t.Errorf("env mode %04o", fi.Mode().Perm())
	}
	if h.Env[AuthTokenVar] != token {
		t.Error("the loaded home does not know the generated token (the redactor reads it)")
	}
	hint := h.LoginHint("0.0.0.0:7420", &net.TCPAddr{IP: net.IPv4zero, Port: 7420})
	if strings.Contains(hint, token) || !strings.Contains(hint, AuthTokenVar+" in "+filepath.Join(h.Dir, "env")) || !strings.Contains(hint, ":7420/login") {
		t.Errorf("hint = %q", hint)
	}
	again, generated, err := h.ServeAuth(events.NewRedactor(), "0.0.0.0:7420", noEnv)
	if err != nil || generated || again != token {
		t.Errorf("second serve = %v %v, want the same token, not generated", generated, err)
	}
	// Loopback needs none and gets none.
	h2 := authHome(t, "", "")
	if tok, gen, err := h2.ServeAuth(events.NewRedactor(), "127.0.0.1:7420", noEnv); tok != "" || gen || err != nil {
		t.Errorf("loopback: %q %v %v", tok, gen, err)
	}
}

// Item 2: a weak token is refused wherever it came from, and the error
// says where.
func TestWeakTokenRefusedNamingItsSource(t *testing.T) {
	for _, c := range []struct {
		config, env, process, addr, where string
	}{
		{"auth_token: a", "", "", "0.0.0.0:7420", "auth_token in "},
		{"auth_token: change-me", "", "", "127.0.0.1:7420", "config.yaml"},
		{"", "CREW_AUTH_TOKEN=change-me", "", "0.0.0.0:7420", "CREW_AUTH_TOKEN in "},
		{"", "", "s3cret", "0.0.0.0:7420", "CREW_AUTH_TOKEN in the process environment"},
	} {
		h := authHome(t, c.config, c.env)
		getenv := func(k string) string {
			if k == AuthTokenVar {
				return c.process
			}
			return ""
		}
		_, _, err := h.ServeAuth(events.NewRedactor(), c.addr, getenv)
		if err == nil || !strings.Contains(err.Error(), c.where) {
			t.Errorf("%+v: err = %v, want it to name %q", c, err, c.where)
		}
		for _, tok := range []string{"change-me", "s3cret"} {
			if err != nil && strings.Contains(err.Error(), tok) {
				t.Errorf("%+v: the error quotes the token: %v", c, err)
			}
		}
	}
	h := authHome(t, "web:\n  hosts: [crew.example.com]", "")
	if _, _, err := h.ServeAuth(events.NewRedactor(), "127.0.0.1:7420", noEnv); err == nil || !strings.Contains(err.Error(), "web.hosts") {
		t.Errorf("web.hosts without a token: err = %v", err)
	}
	if got := h.WebHosts("mybox.lan:7420"); strings.Join(got, ",") != "crew.example.com,mybox.lan" {
		t.Errorf("WebHosts = %v", got)
	}
}

// crew doctor says where the token and the audit key are, never what.
func TestDoctorNamesSecretsNotValues(t *testing.T) {
	tok := web.GenerateToken()
	h := authHome(t, "", "CREW_AUTH_TOKEN="+tok)
	out := strings.Join(h.WebTrust(noEnv), "\n")
	if strings.Contains(out, tok) || strings.Contains(out, h.Env[AuditKeyVar]) {
		t.Fatalf("doctor printed a secret: %s", out)
	}
	for _, want := range []string{"web: auth token from CREW_AUTH_TOKEN in " + filepath.Join(h.Dir, "env") + " (ok)", "audit key: CREW_AUDIT_KEY in "} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	weak := authHome(t, "auth_token: change-me", "").WebTrust(noEnv)
	if !strings.Contains(weak[0], "refused by crew serve") {
		t.Errorf("weak token not flagged: %s", weak)
	}
}

// After start the server removes the secret-named variables from its own
// environment; the others stay.
func TestServeDropsSecretVariables(t *testing.T) {
	environ := []string{"PATH=/bin", "OPENROUTER_API_KEY=sk-or-12345678", "TELEGRAM_BOT_TOKEN=1:abcdefgh", "db_password=x", "HOME=/h", "MY_SECRET=s"}
	var unset []string
	DropSecretEnv(func() []string { return environ }, func(k string) error { unset = append(unset, k); return nil })
	slices.Sort(unset)
	if want := []string{"MY_SECRET", "OPENROUTER_API_KEY", "TELEGRAM_BOT_TOKEN", "db_password"}; !slices.Equal(unset, want) {
		t.Errorf("unset %v, want %v", unset, want)
	}
}

// Every <home>/env value is a secret but the address and route settings.
func TestEnvFileValuesAreSecrets(t *testing.T) {
	h := &Home{Env: map[string]string{
		"CREW_AUTH_TOKEN": "tok-0123456789", "ANYTHING": "plain-value",
		"OLLAMA_HOST": "http://127.0.0.1:11434", "OPENROUTER_BASE_URL": "https://user:pw@proxy.example/v1",
	}}
	r := events.NewRedactor()
	h.LoadSecrets(r, nil)
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

// config.yaml's auth_token is redacted too.
func TestConfigSecretsAreRedacted(t *testing.T) {
	h := &Home{Env: map[string]string{}, Config: &Config{AuthToken: "cfg-token-0123456789"}}
	r := events.NewRedactor()
	h.LoadSecrets(r, nil)
	if got := r.String("token cfg-token-0123456789"); got != "token [redacted:auth_token]" {
		t.Errorf("got %q", got)
	}
}

// R-X-15: /mcp always needs the home's CREW_AUTH_TOKEN; a loopback home
// without one gets it generated into <home>/env. That generated token
// does not by itself turn on login for the loopback web UI (serve after
// serve); a token the owner sets does, and off loopback or with web.hosts
// the generated one guards the web UI too. A home served with the older
// CREW_MCP_TOKEN keeps its value.
func TestMCPTokenIsAGeneratedAuthTokenThatLeavesLoopbackWebOpen(t *testing.T) {
	h := authHome(t, "", "")
	tok, err := h.MCPToken(noEnv, true)
	if err != nil || web.CheckToken(tok) != nil {
		t.Fatalf("MCPToken = %q, %v", tok, err)
	}
	vars, _ := ReadEnvFile(filepath.Join(h.Dir, "env"))
	if vars[AuthTokenVar] != tok {
		t.Fatalf("env holds %s=%q, want the /mcp token", AuthTokenVar, vars[AuthTokenVar])
	}
	mark, _ := os.ReadFile(filepath.Join(h.Dir, mcpTokenMark))
	if strings.Contains(string(mark), tok) {
		t.Fatal("the mark holds the token itself")
	}
	for i := range 2 { // the next serves read it back from the env file
		h2, err := Load(h.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := h2.MCPToken(noEnv, true); again != tok {
			t.Fatalf("serve %d: /mcp token changed", i+2)
		}
		r := events.NewRedactor()
		if wt, gen, err := h2.ServeAuth(r, "127.0.0.1:7420", noEnv); wt != "" || gen || err != nil {
			t.Fatalf("serve %d on loopback: web token %q %v %v, want none (no login)", i+2, wt, gen, err)
		}
		if r.String(tok) == tok {
			t.Error("the redactor does not know the /mcp token")
		}
		// Login turns on off loopback with the token made for /mcp, and
		// serve says so with its /login hint, as for a token made for
		// that listen.
		if wt, gen, _ := h2.ServeAuth(events.NewRedactor(), "0.0.0.0:7420", noEnv); wt != tok || !gen {
			t.Errorf("off loopback: web token %q (generated %v), want the one made for /mcp, announced", wt, gen)
		}
		if line := strings.Join(h2.WebTrust(noEnv), "\n"); !strings.Contains(line, "no login") || strings.Contains(line, tok) {
			t.Errorf("doctor: %s", line)
		}
	}
	hosts := authHome(t, "web:\n  hosts: [crew.example.com]", "")
	ht, _ := hosts.MCPToken(noEnv, true)
	if wt, _, err := hosts.ServeAuth(events.NewRedactor(), "127.0.0.1:7420", noEnv); wt != ht || err != nil {
		t.Errorf("web.hosts: web token %q %v, want the generated one", wt, err)
	}
	own := web.GenerateToken()
	set := authHome(t, "", AuthTokenVar+"="+own)
	if mt, _ := set.MCPToken(noEnv, true); mt != own {
		t.Errorf("owner's token: /mcp uses %q", mt)
	}
	if wt, _, _ := set.ServeAuth(events.NewRedactor(), "127.0.0.1:7420", noEnv); wt != own {
		t.Errorf("owner's token on loopback: web token %q, want it (login on)", wt)
	}
	// Even after the mark exists for another value.
	os.WriteFile(filepath.Join(set.Dir, mcpTokenMark), []byte(tokenMark(tok)+"\n"), 0o600)
	if wt, _, _ := set.ServeAuth(events.NewRedactor(), "127.0.0.1:7420", noEnv); wt != own {
		t.Errorf("owner's token with a stale mark: web token %q", wt)
	}
	legacy := web.GenerateToken()
	old := authHome(t, "", legacyMCPTokenVar+"="+legacy)
	if mt, _ := old.MCPToken(noEnv, true); mt != legacy {
		t.Errorf("a home with %s: /mcp token %q, want its value kept", legacyMCPTokenVar, mt)
	}
	if wt, _, _ := old.ServeAuth(events.NewRedactor(), "127.0.0.1:7420", noEnv); wt != "" {
		t.Errorf("a migrated token turned on login on loopback")
	}
}

// ServeAuth teaches the redactor the token it settles, wherever it came
// from (here the process environment, which no LoadSecrets read into this
// redactor), so serve's own log never shows it.
func TestServeAuthRedactsTheTokenItReturns(t *testing.T) {
	h := authHome(t, "", "")
	const token = "Zq8vN3kLp2Xw7RtY5mJc9HbF4sGd6AeU"
	r := events.NewRedactor()
	got, generated, err := h.ServeAuth(r, "0.0.0.0:7420", func(k string) string {
		if k == AuthTokenVar {
			return token
		}
		return ""
	})
	if err != nil || got != token || generated {
		t.Fatalf("ServeAuth = %q %v %v, want the environment's token, not generated", got, generated, err)
	}
	if s := r.String("Bearer " + token); strings.Contains(s, token) {
		t.Errorf("the redactor lets the token through: %q", s)
	}
}
