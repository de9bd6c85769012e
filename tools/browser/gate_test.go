package browser

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/tools"
)

// withOutline is a manager whose agent "a" has, in conversation "c", a tab
// whose last outline gave these refs; no Chromium runs.
func withOutline(t *testing.T, refs map[string]element) *Manager {
	t.Helper()
	m := NewManager(Config{Home: t.TempDir(), Chromium: "/nonexistent"})
	t.Cleanup(func() { close(m.stop); <-m.done })
	tb := &tab{refs: refs, cancel: func() {}}
	m.live["a"] = &instance{tabs: map[string]*convTabs{"c": {list: []*tab{tb}}}, proxy: &proxy{}}
	return m
}

func env(policy tools.AgentPolicy) tools.Env {
	return tools.Env{AgentID: "a", Conversation: "c", Workspace: os.TempDir(), Agent: policy}
}

func args(v any) json.RawMessage { b, _ := json.Marshal(v); return b }

// TestBrowserNavigateRoutineInsideBrowserHostsAsksOutside (R-GATE-4): a
// host in browser_hosts (or its subdomain, or the listed port) is routine;
// any other host asks even when autonomous, with the host on the card.
func TestBrowserNavigateRoutineInsideBrowserHostsAsksOutside(t *testing.T) {
	e := env(tools.AgentPolicy{Browser: "read", BrowserHosts: []string{"example.com", "intra.test:8443"}})
	n := tools.NewFunc[navigateArgs](Navigate{})
	for _, u := range []string{"https://example.com/a", "http://www.example.com/", "https://EXAMPLE.com./x", "https://intra.test:8443/"} {
		if !tools.Routine(n, e, args(map[string]string{"url": u})) || tools.AskReason(n, e, args(map[string]string{"url": u})) != "" {
			t.Errorf("%s is not routine", u)
		}
	}
	for _, u := range []string{"https://evil.com/", "https://example.com.evil.com/", "https://notexample.com/", "https://intra.test/", "https://intra.test:9443/"} {
		if tools.Routine(n, e, args(map[string]string{"url": u})) {
			t.Errorf("%s is routine", u)
		}
		if r := tools.AskReason(n, e, args(map[string]string{"url": u})); !strings.Contains(r, "not in browser_hosts") {
			t.Errorf("%s: ask reason %q", u, r)
		}
	}
	if !tools.NeedsApproval(n) {
		t.Error("browser_navigate is not gated")
	}
	for _, bad := range []string{"file:///etc/passwd", "javascript:alert(1)", "chrome://settings", "http://u:p@example.com/"} {
		if err := tools.Check(n, e, args(map[string]string{"url": bad})); err == nil {
			t.Errorf("%s passed Check", bad)
		}
	}
}

// TestBrowserActAsksOnAskPatternsAndUploads (R-GATE-4): an element whose
// name matches a default ask pattern — English or Vietnamese, in either
// Unicode form — or the agent's browser_ask_patterns asks even when
// autonomous; so does any upload; other clicks follow the gate's mode; a
// ref the conversation was never shown is refused before anyone is asked.
func TestBrowserActAsksOnAskPatternsAndUploads(t *testing.T) {
	m := withOutline(t, map[string]element{
		"e1": {Role: "button", Name: "Thanh toán"},
		"e2": {Role: "button", Name: "Xoá tài khoản"},
		"e3": {Role: "link", Name: "Checkout now"},
		"e4": {Role: "button", Name: "Next page"},
		"e5": {Role: "button", Name: "Archive everything"},
		"e6": {Role: "button", Name: "xo\u0301a"}, // decomposed ó
		"e7": {Role: "button", Name: "Đặt hàng"},
		"e8": {Role: "link", Name: "Report.pdf"},
	})
	e := env(tools.AgentPolicy{Browser: "act", BrowserAskPatterns: []string{`^archive`}})
	a := tools.NewFunc[actArgs](Act{base{m}})
	for ref, want := range map[string]bool{"e1": true, "e2": true, "e3": true, "e4": false, "e5": true, "e6": true, "e7": true} {
		r := tools.AskReason(a, e, args(map[string]string{"ref": ref, "action": "click"}))
		if (r != "") != want {
			t.Errorf("%s: ask reason %q, want asking %v", ref, r, want)
		}
		if err := tools.Check(a, e, args(map[string]string{"ref": ref, "action": "click"})); err != nil {
			t.Errorf("%s: Check %v", ref, err)
		}
	}
	if r := tools.AskReason(a, e, args(map[string]string{"ref": "e4", "action": "upload", "path": "x.txt"})); !strings.Contains(r, "uploads x.txt") {
		t.Errorf("upload: ask reason %q", r)
	}
	if err := tools.Check(a, e, args(map[string]string{"ref": "e99", "action": "click"})); err == nil || !strings.Contains(err.Error(), "browser_snapshot") {
		t.Errorf("unknown ref: %v", err)
	}
	if err := tools.Check(a, e, args(map[string]string{"ref": "e4", "action": "upload", "path": "../../etc/passwd"})); err == nil {
		t.Error("upload outside the workspace passed Check")
	}
	if !tools.NeedsApproval(a) || !tools.NeedsApproval(tools.NewFunc[downloadArgs](Download{})) {
		t.Error("browser_act / browser_download are not gated")
	}
	d := tools.NewFunc[downloadArgs](Download{base{m}})
	if r := tools.AskReason(d, e, args(map[string]string{"ref": "e8"})); r != "" {
		t.Errorf("download of a plain link asks: %q", r)
	}
	if r := tools.AskReason(d, e, args(map[string]string{"ref": "e1"})); r == "" {
		t.Error("download by a pay button does not ask")
	}
	// An invalid pattern asks rather than waving through (fail closed).
	bad := env(tools.AgentPolicy{BrowserAskPatterns: []string{`(`}})
	if r := tools.AskReason(a, bad, args(map[string]string{"ref": "e4", "action": "click"})); r == "" {
		t.Error("an invalid ask pattern let the click through")
	}
	if err := tools.ValidatePolicy(bad.Agent); err == nil || !strings.Contains(err.Error(), "browser_ask_patterns") {
		t.Errorf("ValidatePolicy: %v", err)
	}
}

// TestBrowserToolsRefuseWhileLoginWindowOpen (R-BRW): while crew browser
// login holds the profile, every browser tool refuses and says why, and
// the agent's running browser is stopped; a marker left by a dead login
// does not count.
func TestBrowserToolsRefuseWhileLoginWindowOpen(t *testing.T) {
	m := withOutline(t, map[string]element{"e1": {Role: "button", Name: "Go"}})
	home := m.cfg.Home
	os.MkdirAll(filepath.Join(home, "browser"), 0o700)
	if err := os.WriteFile(loginMarker(home, "a"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		t.Fatal(err)
	}
	perTool := map[string]any{
		"browser_navigate": map[string]string{"url": "https://example.com/"},
		"browser_act":      map[string]string{"ref": "e1", "action": "click"},
		"browser_download": map[string]string{"ref": "e1"},
	}
	for _, tl := range Tools(m) {
		a, ok := perTool[tl.Def().Name]
		if !ok {
			a = map[string]string{}
		}
		res, err := tl.Run(context.Background(), env(tools.AgentPolicy{Browser: "act"}), args(a))
		if err != nil || !res.IsError || !strings.Contains(res.Output, "crew browser login") || !strings.Contains(res.Output, "refuse") {
			t.Errorf("%s: %v %+v", tl.Def().Name, err, res)
		}
	}
	if m.Running("a") {
		t.Error("the agent's browser still runs while the login window is open")
	}
	if err := m.use(context.Background(), "a", func(*instance) error { return nil }); !errors.Is(err, ErrLogin) {
		t.Errorf("use: %v", err)
	}
	os.WriteFile(loginMarker(home, "a"), []byte("999999999"), 0o600)
	if _, held := LoginHeld(home, "a"); held {
		t.Error("a dead login's marker holds the profile")
	}
}

func TestLoginNeedsADisplay(t *testing.T) {
	err := Login(context.Background(), LoginConfig{Home: t.TempDir(), Agent: "a", Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "DISPLAY") {
		t.Fatalf("Login without a display: %v", err)
	}
}

func TestHostListedParsesEntries(t *testing.T) {
	u, _ := url.Parse("http://[::1]:8080/")
	if !hostListed([]string{"[::1]:8080"}, u) || hostListed([]string{"[::1]:80"}, u) {
		t.Error("bracketed IPv6 entries")
	}
}

func TestToolNames(t *testing.T) {
	if len(ToolNames("read")) != 6 || len(ToolNames("act")) != 8 || ToolNames("") != nil {
		t.Errorf("read %v act %v", ToolNames("read"), ToolNames("act"))
	}
	for _, n := range ToolNames("read") {
		if n == "browser_act" || n == "browser_download" {
			t.Errorf("read mode has %s", n)
		}
	}
}

// TestBrowserClosedWhenIdle (R-BRW): a browser unused for IdleAfter is
// closed; one in use is not.
func TestBrowserClosedWhenIdle(t *testing.T) {
	m := NewManager(Config{Home: t.TempDir(), Chromium: "/nonexistent", IdleAfter: 40 * time.Millisecond})
	defer m.Close()
	idle := &instance{tabs: map[string]*convTabs{}, last: time.Now().Add(-time.Hour)}
	busy := &instance{tabs: map[string]*convTabs{}, last: time.Now().Add(-time.Hour)}
	busy.mu.Lock() // a call in progress
	m.mu.Lock()
	m.live["idle"], m.live["busy"] = idle, busy
	m.mu.Unlock()
	eventstest.Eventually(t, "the idle browser closed", func() bool {
		idle.mu.Lock()
		defer idle.mu.Unlock()
		return idle.closed && !m.Running("idle")
	})
	if !m.Running("busy") {
		t.Error("a browser in use was closed")
	}
	busy.mu.Unlock()
}

// Refused before asking (issue 26): a URL the network wall can only refuse
// — a loopback, private, link-local or metadata address, a name that
// resolves only to one, a port other than 80 and 443 — fails Check, which
// the pipeline runs before the gate, so the owner is never asked about it.
func TestBrowserNavigateToANonPublicAddressIsRefusedBeforeAsking(t *testing.T) {
	e := env(tools.AgentPolicy{Browser: "read"})
	n := tools.NewFunc[navigateArgs](Navigate{})
	for _, u := range []string{"http://127.0.0.1/", "https://[::1]/admin", "http://169.254.169.254/latest/meta-data/", "http://10.1.2.3/", "http://192.168.0.1:443/", "http://localhost/", "https://93.184.216.34:8443/"} {
		err := tools.Check(n, e, args(map[string]string{"url": u}))
		if err == nil || !strings.Contains(err.Error(), "refused by the crew's network wall") || !strings.Contains(err.Error(), "nothing was asked") {
			t.Errorf("%s: Check = %v, want the wall's refusal", u, err)
		}
	}
	if err := tools.Check(n, e, args(map[string]string{"url": "https://93.184.216.34/"})); err != nil {
		t.Errorf("a public address: %v", err)
	}
}
