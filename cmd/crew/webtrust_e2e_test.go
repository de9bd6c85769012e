package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/gateways/web"
)

// everyRoute is every route the web server can have: the config wires
// every optional part (never called: only the patterns are read).
func everyRoute() []string {
	return web.Routes(web.Config{
		Pages: &web.Pages{}, Inbound: struct{ web.Receiver }{}, Approvals: struct{ web.Approver }{},
		Live: func(string, func([]byte)) (func(), error) { return func() {}, nil },
		Jobs: struct{ web.Jobs }{}, Memory: struct{ web.MemoryService }{}, Conversations: struct{ web.ConversationOps }{},
	})
}

// routeRequest is a request that would reach pattern.
func routeRequest(t *testing.T, base, pattern string) *http.Request {
	t.Helper()
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = http.MethodGet, pattern
	}
	path = strings.ReplaceAll(strings.ReplaceAll(path, "{$}", ""), "{id}", "x1")
	if strings.HasSuffix(path, "/") && path != "/" {
		path += "app.js"
	}
	var body io.Reader
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, body)
	if method == http.MethodPost {
		req, err = http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(`{"text":"hi"}`))
		req.Header.Set("Content-Type", "application/json")
	}
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// Item 1 against the real server: a DNS-rebinding page (Host and Origin
// attacker.example on the server's port) gets 421 on every route; its
// "approve, always" of a pending shell_run does not run the command, and
// the owner's own approval still does.
func TestDNSRebindingRefusedByRealServer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home")
	if _, _, code := crew(t, dir, "init"); code != 0 {
		t.Fatal("init failed")
	}
	script := writeScript(t, `
- tool_calls:
    - name: shell_run
      arguments: {command: "echo ran > ran.txt"}
- text: "Ran it."
`)
	s := startServe(t, dir, "MY_AGENT_ROUTES=fake:script:"+script)
	code, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "run it"})
	if code != 202 {
		t.Fatalf("inbound = %d %v", code, acc)
	}
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "awaiting approval", func(c convView) bool { return c.Status == "awaiting_approval" })
	if len(c.PendingApprovals) != 1 || c.PendingApprovals[0].Tool != "shell_run" {
		t.Fatalf("pending = %+v", c.PendingApprovals)
	}
	approval := c.PendingApprovals[0].ID
	port := s.url[strings.LastIndex(s.url, ":")+1:]
	evil := "attacker.example:" + port
	hc := &http.Client{Timeout: 5 * time.Second} // an SSE route let through would stream forever
	attack := func(req *http.Request) (int, string) {
		req.Host = evil
		req.Header.Set("Origin", "http://"+evil)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	routes := everyRoute()
	for _, pattern := range routes {
		if code, body := attack(routeRequest(t, s.url, pattern)); code != http.StatusMisdirectedRequest || !strings.Contains(body, "127.0.0.1:"+port) {
			t.Errorf("%s with Host %s = %d %.200s, want 421 naming 127.0.0.1:%s", pattern, evil, code, body, port)
		}
	}
	for _, path := range []string{"/api/approvals/" + approval} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+path, strings.NewReader(`{"decision":"approve","always":true}`))
		req.Header.Set("Content-Type", "application/json")
		if code, body := attack(req); code != http.StatusMisdirectedRequest {
			t.Errorf("rebinding approve+always = %d %s, want 421", code, body)
		}
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+"/approvals/"+approval+"/decide",
		strings.NewReader(url.Values{"decision": {"always"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if code, _ := attack(req); code != http.StatusMisdirectedRequest {
		t.Errorf("rebinding approval form = %d, want 421", code)
	}
	ran := filepath.Join(dir, "workspace", "ran.txt")
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the rebinding page's approval ran the command")
	}
	if c := waitConv(t, s.url, id, "still awaiting approval", func(c convView) bool { return true }); c.Status != "awaiting_approval" {
		t.Fatalf("after the attack: status %s", c.Status)
	}
	// A browser page of another origin on our own Host is refused too.
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+"/api/approvals/"+approval, strings.NewReader(`{"decision":"approve"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://attacker.example:"+port)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign Origin on our Host = %v %v, want 403", resp, err)
	}
	// The owner's script (no Origin, our Host) approves: 200, not 409
	// already_decided, so no attack above decided it; the command runs once.
	if code, body := postJSON(t, s.url+"/api/approvals/"+approval, map[string]any{"decision": "approve"}); code != 200 {
		t.Fatalf("approve = %d %v (409 would mean the attack decided it)", code, body)
	}
	waitConv(t, s.url, id, "idle", settled)
	if b, err := os.ReadFile(ran); err != nil || string(b) != "ran\n" {
		t.Errorf("ran.txt after the owner's approval = %q %v", b, err)
	}
	s.stop(t)
}

// Item 2 against the real server: with a token, the login sets a session
// cookie (never the token), the session survives a restart, logout ends
// it; the token and the audit key are in no output and no file under
// data/.
func TestTokenLoginSessionOnRealServer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home")
	if _, _, code := crew(t, dir, "init"); code != 0 {
		t.Fatal("init failed")
	}
	token, _, err := home.EnsureEnvSecret(dir, home.AuthTokenVar, "test", web.GenerateToken)
	if err != nil {
		t.Fatal(err)
	}
	vars, _ := home.ReadEnvFile(filepath.Join(dir, "env"))
	key := vars[home.AuditKeyVar]
	if len(key) < 32 {
		t.Fatalf("crew init wrote no audit key: %v", vars)
	}
	s := startServe(t, dir)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) int {
		resp, err := c.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/"); code != http.StatusSeeOther {
		t.Fatalf("GET / without login = %d", code)
	}
	get("/login")
	u, _ := url.Parse(s.url)
	csrf := ""
	for _, ck := range jar.Cookies(u) {
		if ck.Name == "crew_csrf" {
			csrf = ck.Value
		}
	}
	resp, err := c.PostForm(s.url+"/login", url.Values{"token": {token}, "csrf": {csrf}})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login = %v %v", resp, err)
	}
	for _, ck := range jar.Cookies(u) {
		if strings.Contains(ck.Value, token) {
			t.Errorf("cookie %s holds the token", ck.Name)
		}
	}
	if code := get("/"); code != 200 {
		t.Fatalf("GET / after login = %d", code)
	}
	// Kept in the log's bucket (issue 30 item 4), not in a file.
	if _, err := os.Stat(filepath.Join(dir, "data", "web-sessions.json")); !os.IsNotExist(err) {
		t.Errorf("a sessions file was written: %v", err)
	}
	s.stop(t)
	s = startServe(t, dir)
	if code := get("/"); code != 200 {
		t.Errorf("GET / after a restart = %d, want the session kept", code)
	}
	resp, err = c.PostForm(s.url+"/logout", url.Values{"csrf": {csrf}})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout = %v %v", resp, err)
	}
	if code := get("/"); code != http.StatusSeeOther {
		t.Errorf("GET / after logout = %d, want 303 to /login", code)
	}
	s.stop(t)
	for _, secret := range []string{token, key} {
		if strings.Contains(s.stdout.String()+s.stderr.String(), secret) {
			t.Errorf("a secret is in the server's output")
		}
		filepath.WalkDir(filepath.Join(dir, "data"), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secret)) {
				t.Errorf("a secret is in %s", p)
			}
			return nil
		})
	}
}

// forgeExport edits line n (1-based) of an export and recomputes the plain
// SHA-256 chain from there on, as the 10-line script did; keyed
// hashes are kept (it cannot compute them), or dropped with strip.
func forgeExport(export []byte, n int, edit func(string) string, strip bool) []byte {
	lines := strings.Split(strings.TrimSuffix(string(export), "\n"), "\n")
	prev := ""
	for i, l := range lines {
		cut := strings.LastIndex(l, `,"hash":"`)
		content, sealed := l[:cut], l[cut:]
		mac := ""
		if j := strings.Index(sealed, `","mac":"`); j >= 0 && !strip {
			mac = sealed[j+len(`","mac":"`) : len(sealed)-2]
		}
		if i+1 == n {
			content = edit(content)
		}
		if i+1 > n {
			p := strings.LastIndex(content, `"prev":"`)
			content = content[:p] + `"prev":"` + prev + `"`
		}
		sum := sha256.Sum256([]byte(content + "}"))
		prev = hex.EncodeToString(sum[:])
		l = content + `,"hash":"` + prev
		if mac != "" {
			l += `","mac":"` + mac
		}
		lines[i] = l + `"}`
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// Item 9 end to end: crew export (and the web download) are keyed with the
// home's audit key; crew verify proves the origin with the home or a key
// file, catches the forgery, and without a key says the origin is
// not proven.
func TestForgedExportFailsKeyedVerifyCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home")
	if _, _, code := crew(t, dir, "init"); code != 0 {
		t.Fatal("init failed")
	}
	s := startServe(t, dir)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "pay 10 to alice"})
	id := acc["conversation_id"].(string)
	waitConv(t, s.url, id, "answered", settled)
	tmp := t.TempDir()
	file := filepath.Join(tmp, "c.jsonl")
	if _, errOut, code := crew(t, dir, "export", id, "-o", file); code != 0 {
		t.Fatalf("export from the running server: %s", errOut)
	}
	resp, err := http.Get(s.url + "/api/conversations/" + id + "/export")
	if err != nil {
		t.Fatal(err)
	}
	download, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s.stop(t)
	webFile := filepath.Join(tmp, "web.jsonl")
	os.WriteFile(webFile, download, 0o600)
	other := filepath.Join(t.TempDir(), "other")
	crew(t, other, "init")
	keyFile := filepath.Join(tmp, "key")
	vars, _ := home.ReadEnvFile(filepath.Join(dir, "env"))
	os.WriteFile(keyFile, []byte(vars[home.AuditKeyVar]+"\n"), 0o600)

	good, _ := os.ReadFile(file)
	msgLine := 0
	for i, l := range strings.Split(string(good), "\n") {
		if strings.Contains(l, "pay 10 to alice") {
			msgLine = i + 1
			break
		}
	}
	pay := func(l string) string { return strings.Replace(l, "pay 10 to alice", "pay 9999 to mallory", 1) }
	forged := filepath.Join(tmp, "forged.jsonl")
	os.WriteFile(forged, forgeExport(good, msgLine, pay, false), 0o600)
	stripped := filepath.Join(tmp, "stripped.jsonl")
	os.WriteFile(stripped, forgeExport(good, msgLine, pay, true), 0o600)

	for _, c := range []struct {
		name string
		home string
		args []string
		code int
		want string
	}{
		{"the export, with the home", dir, []string{"verify", file}, 0, "intact, written by this home"},
		{"the web download, with the home", dir, []string{"verify", webFile}, 0, "intact, written by this home"},
		{"with the key file", other, []string{"verify", "--key-file", keyFile, file}, 0, "intact, written by this home"},
		{"with the env file as key file", other, []string{"verify", "--key-file", filepath.Join(dir, "env"), file}, 0, "intact, written by this home"},
		{"--no-key", dir, []string{"verify", "--no-key", file}, 0, "origin not proven"},
		{"no home at all", filepath.Join(tmp, "nohome"), []string{"verify", file}, 3, "origin not proven"},
		{"another home's key", other, []string{"verify", file}, 1, "line 1: keyed hash fails"},
		{"the forgery", dir, []string{"verify", forged}, 1, fmt.Sprintf("line %d: keyed hash fails", msgLine)},
		{"the forgery, without a key", dir, []string{"verify", "--no-key", forged}, 0, "origin not proven"},
		{"the forgery with macs removed, against the keyed home", dir, []string{"verify", stripped}, 1, "line 1: no keyed hash, but this home has an audit key"},
		{"the forgery with macs removed, no home", filepath.Join(tmp, "nohome"), []string{"verify", stripped}, 3, "origin not proven: the file has no keyed hashes"},
		{"the forgery with macs removed, --no-key", dir, []string{"verify", "--no-key", stripped}, 0, "origin not proven: the file has no keyed hashes"},
	} {
		out, errOut, code := crew(t, c.home, c.args...)
		if code != c.code || !strings.Contains(out+errOut, c.want) {
			t.Errorf("%s: code %d, %q %q; want %d and %q", c.name, code, out, errOut, c.code, c.want)
		}
		if c.code != 1 && strings.Contains(c.want, "origin not proven") && strings.Contains(out, "written by this home") {
			t.Errorf("%s: claims the origin: %q", c.name, out)
		}
	}
}

// Item 2: serve refuses a weak token and a config.yaml others can read
// that holds one, naming the file.
func TestServeRefusesWeakToken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home")
	if _, _, code := crew(t, dir, "init"); code != 0 {
		t.Fatal("init failed")
	}
	cfg := filepath.Join(dir, "config.yaml")
	if fi, _ := os.Stat(cfg); fi.Mode().Perm() != 0o600 {
		t.Errorf("crew init wrote config.yaml %04o, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(cfg)
	// A serve that wrongly starts is stopped after 30 s and fails the test.
	refused := func() (string, int) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, crewBin, "serve", "--listen", "127.0.0.1:0")
		cmd.Env = append(os.Environ(), "CREW_HOME="+dir)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		cmd.Run()
		return errb.String(), cmd.ProcessState.ExitCode()
	}
	os.WriteFile(cfg, append(b, "\nauth_token: a\n"...), 0o600)
	errOut, code := refused()
	if code != 1 || !strings.Contains(errOut, "auth_token in "+cfg) || !strings.Contains(errOut, "at least 32") {
		t.Errorf("weak token: code %d, %q", code, errOut)
	}
	strong := web.GenerateToken()
	os.WriteFile(cfg, append(b, "\nauth_token: "+strong+"\n"...), 0o600)
	os.Chmod(cfg, 0o644)
	errOut, code = refused()
	if code != 1 || !strings.Contains(errOut, "chmod 600 "+cfg) || strings.Contains(errOut, strong) {
		t.Errorf("token in a config.yaml others can read: code %d, %q", code, errOut)
	}
}
