package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/gateways/web"
)

func authHome(t *testing.T, config, envFile string) *home.Home {
	t.Helper()
	dir := t.TempDir()
	if _, err := home.Init(dir); err != nil {
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
	h, err := home.Load(dir)
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
	env := &cliEnv{getenv: noEnv}
	token, generated, err := serveAuth(env, h, "0.0.0.0:7420")
	if err != nil || !generated {
		t.Fatalf("serveAuth = %v %v", generated, err)
	}
	if err := web.CheckToken(token); err != nil {
		t.Errorf("generated token is weak: %v", err)
	}
	vars, err := home.ReadEnvFile(filepath.Join(h.Dir, "env"))
	if err != nil || vars[home.AuthTokenVar] != token || vars["OPENROUTER_API_KEY"] != "sk-test" || vars[home.AuditKeyVar] == "" {
		t.Errorf("env after = %v, %v", vars, err)
	}
	if fi, _ := os.Stat(filepath.Join(h.Dir, "env")); fi.Mode().Perm() != 0o600 {
		t.Errorf("env mode %04o", fi.Mode().Perm())
	}
	if h.Env[home.AuthTokenVar] != token {
		t.Error("the loaded home does not know the generated token (the redactor reads it)")
	}
	hint := loginHint(h, "0.0.0.0:7420", &net.TCPAddr{IP: net.IPv4zero, Port: 7420})
	if strings.Contains(hint, token) || !strings.Contains(hint, home.AuthTokenVar+" in "+filepath.Join(h.Dir, "env")) || !strings.Contains(hint, ":7420/login") {
		t.Errorf("hint = %q", hint)
	}
	again, generated, err := serveAuth(env, h, "0.0.0.0:7420")
	if err != nil || generated || again != token {
		t.Errorf("second serve = %v %v, want the same token, not generated", generated, err)
	}
	// Loopback needs none and gets none.
	h2 := authHome(t, "", "")
	if tok, gen, err := serveAuth(env, h2, "127.0.0.1:7420"); tok != "" || gen || err != nil {
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
		env := &cliEnv{getenv: func(k string) string {
			if k == home.AuthTokenVar {
				return c.process
			}
			return ""
		}}
		_, _, err := serveAuth(env, h, c.addr)
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
	if _, _, err := serveAuth(&cliEnv{getenv: noEnv}, h, "127.0.0.1:7420"); err == nil || !strings.Contains(err.Error(), "web.hosts") {
		t.Errorf("web.hosts without a token: err = %v", err)
	}
	if got := webHosts(h, "mybox.lan:7420"); strings.Join(got, ",") != "crew.example.com,mybox.lan" {
		t.Errorf("webHosts = %v", got)
	}
}

// An unspecified listen address is reached, and named, as 127.0.0.1.
func TestReachableURL(t *testing.T) {
	for addr, want := range map[string]string{"0.0.0.0:7420": "http://127.0.0.1:7420", "[::]:80": "http://127.0.0.1:80", "127.0.0.1:9": "http://127.0.0.1:9", "[::1]:9": "http://[::1]:9"} {
		a, _ := net.ResolveTCPAddr("tcp", addr)
		if got := reachableURL(a); got != want {
			t.Errorf("reachableURL(%s) = %s, want %s", addr, got, want)
		}
	}
}

// crew doctor says where the token and the audit key are, never what.
func TestDoctorNamesSecretsNotValues(t *testing.T) {
	tok := web.GenerateToken()
	h := authHome(t, "", "CREW_AUTH_TOKEN="+tok)
	var b strings.Builder
	printWebTrust(&b, &cliEnv{getenv: noEnv}, h)
	out := b.String()
	if strings.Contains(out, tok) || strings.Contains(out, h.Env[home.AuditKeyVar]) {
		t.Fatalf("doctor printed a secret: %s", out)
	}
	for _, want := range []string{"web: auth token from CREW_AUTH_TOKEN in " + filepath.Join(h.Dir, "env") + " (ok)", "audit key: CREW_AUDIT_KEY in "} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	printWebTrust(&b, &cliEnv{getenv: noEnv}, authHome(t, "auth_token: change-me", ""))
	if !strings.Contains(b.String(), "refused by crew serve") {
		t.Errorf("weak token not flagged: %s", b.String())
	}
}
