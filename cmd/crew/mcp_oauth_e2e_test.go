package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/tools/mcp/oauthtest"
)

// Issue 31 item 2, through real crew serve: an MCP server behind a small
// authorization server (both on 127.0.0.1) answers 401 with
// protected-resource metadata, so its tools are not offered, the model is
// told the server is unavailable and /api/mcp and doctor say "needs login:
// run crew mcp login secure"; crew mcp login prints the URL (the test is
// the browser: a callback with a wrong state is refused, then the real one
// logs in) and stores the token 0600; the running serve uses it without a
// restart; once the token nears expiry (the server refusing it) serve
// refreshes it; crew mcp logout revokes it and the tool needs login again.
// No token is ever in the log, the export, or serve's output.
func TestMCPOAuthLoginThroughServe(t *testing.T) {
	const life = 70 * time.Second // refreshed from 60 s before expiry: 10 s after it is issued
	as := oauthtest.Start(t, oauthtest.Options{TokenLife: life})
	home := initHome(t)
	f, err := os.OpenFile(filepath.Join(home, "config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	fmt.Fprintf(f, "\nmcp_servers:\n  secure:\n    url: %s\n    read_only_tools: [echo]\n", as.MCP)
	f.Close()
	f, err = os.OpenFile(filepath.Join(home, "agent.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	fmt.Fprintf(f, "\nmcp: [secure]\n")
	f.Close()

	model := &toolModel{}
	api := httptest.NewServer(model)
	defer api.Close()
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+api.URL+"/v1")
	stopped := false
	defer func() {
		if !stopped {
			s.stop(t)
		}
	}()
	conv := ""
	ask := func(text string, script ...string) (string, string) {
		t.Helper()
		before := len(model.requests())
		model.queue(script...)
		in := map[string]any{"text": text}
		if conv != "" {
			in["conversation_id"] = conv
		}
		_, acc := postJSON(t, s.url+"/api/inbound", in)
		id, _ := acc["conversation_id"].(string)
		if id == "" {
			t.Fatalf("inbound: %v", acc)
		}
		conv = id
		eventstest.Eventually(t, "the model answered "+text, func() bool { return len(model.requests()) >= before+len(script) })
		waitConv(t, s.url, id, "settled", settled)
		reqs := model.requests()
		return id, reqs[len(reqs)-1].last
	}
	mcpState := func() map[string]any {
		var body struct {
			Servers []map[string]any `json:"servers"`
		}
		if code := getJSON(t, s.url+"/api/mcp", &body); code != 200 || len(body.Servers) != 1 {
			t.Fatalf("GET /api/mcp = %d %v", code, body)
		}
		return body.Servers[0]
	}

	// Before login.
	_, last := ask("find the echo tool", `call:tool_search {"query":"echo"}`, "text:none")
	if !strings.Contains(last, `MCP server \"secure\" is unavailable`) && !strings.Contains(last, `MCP server "secure" is unavailable`) {
		t.Fatalf("the model was not told the server is unavailable: %s", last)
	}
	if st := mcpState(); st["state"] != "needs login" || st["error"] != "needs login: run crew mcp login secure" {
		t.Fatalf("/api/mcp before login: %v", st)
	}
	if out, _, _ := crew(t, home, "doctor"); !strings.Contains(out, "  secure (streamable HTTP "+as.MCP+"): needs login: run crew mcp login secure") {
		t.Errorf("doctor before login:\n%s", out)
	}
	roster := func() string {
		t.Helper()
		resp, err := http.Get(s.url + "/")
		must(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if page := roster(); !strings.Contains(page, `data-mcp-server="secure" data-mcp-state="needs login"`) || !strings.Contains(page, "needs login: run crew mcp login secure") {
		t.Errorf("the roster does not say the server needs login")
	}

	// crew mcp login: the test is the browser.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	login := exec.CommandContext(ctx, crewBin, "mcp", "login", "secure", "--timeout", "90s")
	login.Env = append(os.Environ(), "CREW_HOME="+home)
	var loginErr lockedBuffer
	login.Stderr = &loginErr
	pipe, err := login.StdoutPipe()
	must(t, err)
	must(t, login.Start())
	var loginOut strings.Builder
	var authURL string
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		loginOut.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "http://127.0.0.1") {
			authURL = sc.Text()
			break
		}
	}
	if authURL == "" {
		login.Wait()
		t.Fatalf("crew mcp login printed no URL:\n%s\n%s", loginOut.String(), loginErr.String())
	}
	u, _ := url.Parse(authURL)
	redirect, _ := url.Parse(u.Query().Get("redirect_uri"))
	if redirect.Hostname() != "127.0.0.1" || u.Query().Get("code_challenge_method") != "S256" {
		t.Fatalf("authorization URL %s", authURL)
	}
	forged := *redirect
	forged.RawQuery = url.Values{"code": {"stolen"}, "state": {strings.Repeat("A", len(u.Query().Get("state")))}}.Encode()
	if resp, err := http.Get(forged.String()); err != nil || resp.StatusCode != 400 {
		t.Fatalf("a callback with a wrong state: %v %v, want 400", resp, err)
	}
	if code, body, err := oauthtest.Browse(authURL); err != nil || code != 200 {
		t.Fatalf("browser at the callback: %d %q %v", code, body, err)
	}
	for sc.Scan() {
		loginOut.WriteString(sc.Text() + "\n")
	}
	if err := login.Wait(); err != nil || !strings.Contains(loginOut.String(), "logged in to secure") {
		t.Fatalf("crew mcp login: %v\n%s\n%s", err, loginOut.String(), loginErr.String())
	}
	loggedIn := time.Now()
	tokenFile := filepath.Join(home, "secrets", "mcp", "secure.json")
	if fi, err := os.Stat(tokenFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}

	// The tool works through the running serve, with the login's token.
	_, last = ask("echo it", `call:tool_search {"query":"echo"}`, `call:mcp__secure__echo {"text":"hello oauth"}`, "text:done")
	if !strings.Contains(last, "protected echo: hello oauth") {
		t.Fatalf("the model got %q (server refused: %s)", last, as.Refused())
	}
	if c := as.Calls(); len(c) != 1 || c[0] != as.Issued()[0] {
		t.Fatalf("calls %d, with the login's token: %v", len(c), len(c) > 0 && c[0] == as.Issued()[0])
	}
	if st := mcpState(); st["state"] != "running" {
		t.Errorf("/api/mcp after login: %v", st)
	}
	if page := roster(); !strings.Contains(page, `data-mcp-server="secure" data-mcp-state="running"`) {
		t.Errorf("the roster does not show the server running after login")
	}

	// Near expiry (the server now refusing the old token): refreshed first.
	time.Sleep(time.Until(loggedIn.Add(life - 60*time.Second + time.Second)))
	as.Expire()
	_, last = ask("again", `call:mcp__secure__echo {"text":"after refresh"}`, "text:done")
	if !strings.Contains(last, "protected echo: after refresh") || as.Refreshes() != 1 {
		t.Fatalf("after expiry: refreshes %d, the model got %q (refused: %s)", as.Refreshes(), last, as.Refused())
	}
	if c, issued := as.Calls(), as.Issued(); c[len(c)-1] != issued[1] {
		t.Fatal("the call did not carry the refreshed token")
	}
	stored, _ := os.ReadFile(tokenFile)
	if !strings.Contains(string(stored), as.Issued()[1]) {
		t.Error("the refreshed token was not written back")
	}

	// crew mcp logout: revoked, deleted, and the tool needs login again.
	out, errOut, code := crew(t, home, "mcp", "logout", "secure")
	if code != 0 || !strings.Contains(out, "revoked") {
		t.Fatalf("crew mcp logout = %d\n%s\n%s", code, out, errOut)
	}
	if !as.Revoked(as.Issued()[1]) {
		t.Error("the access token was not revoked")
	}
	if _, err := os.Stat(tokenFile); !os.IsNotExist(err) {
		t.Errorf("the token file is still there: %v", err)
	}
	id, last := ask("once more", `call:mcp__secure__echo {"text":"logged out"}`, "text:done")
	if !strings.Contains(last, "needs login: run crew mcp login secure") || strings.Contains(last, "protected echo: logged out") {
		t.Fatalf("after logout the model got %q", last)
	}
	eventstest.Eventually(t, "/api/mcp says needs login", func() bool { return mcpState()["state"] == "needs login" })

	// No token anywhere it could be written down: serve's output, the
	// log and projections on disk, the export.
	stopped = true
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Signal(syscall.SIGQUIT)
		<-s.done
		t.Fatalf("serve did not stop:\n%s", s.stderr.String())
	}
	if out, _, _ := crew(t, home, "doctor"); !strings.Contains(out, "  secure (streamable HTTP "+as.MCP+"): needs login: run crew mcp login secure") {
		t.Errorf("doctor without a running serve, after logout:\n%s", out)
	}
	export, _, code := crew(t, home, "export", id)
	if code != 0 || !strings.Contains(export, "protected echo") {
		t.Fatalf("export = %d", code)
	}
	secrets := as.Secrets()
	if len(secrets) < 4 {
		t.Fatalf("want two access and two refresh tokens, got %d", len(secrets))
	}
	for _, tok := range secrets {
		if strings.Contains(export, tok) || strings.Contains(s.stdout.String(), tok) || strings.Contains(s.stderr.String(), tok) || strings.Contains(loginOut.String(), tok) {
			t.Fatal("a token is in the export or a command's output")
		}
	}
	filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, tok := range secrets {
			if strings.Contains(string(b), tok) {
				t.Errorf("%s holds a token", p)
				return nil
			}
		}
		return nil
	})
}
