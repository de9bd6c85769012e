package main

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// startXvfb runs a private X server for the test and returns its DISPLAY.
func startXvfb(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("Xvfb"); err != nil {
		if os.Getenv("CREW_REQUIRE_BROWSER") == "1" {
			t.Fatal("no Xvfb and CREW_REQUIRE_BROWSER=1 (apt-get install xvfb)")
		}
		t.Skip("no Xvfb")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", "1280x900x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(r).ReadString('\n')
	r.Close()
	if err != nil {
		t.Fatalf("Xvfb gave no display: %v", err)
	}
	return ":" + strings.TrimSpace(line)
}

// childOf is a live child process of pid, or 0.
func childOf(pid int) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if _, after, ok := strings.Cut(string(stat), ") "); ok {
			if f := strings.Fields(after); len(f) > 1 && f[1] == strconv.Itoa(pid) && f[0] != "Z" {
				return c
			}
		}
	}
	return 0
}

// TestBrowserLoginWindow (R-BRW): crew browser login stops the agent's
// running browser, opens a headed window on the same profile (behind the
// wall: the admitted site loads in it), and while it is open the agent's
// browser tools refuse and say why; once the owner closes the window the
// marker is gone and the tools work again.
func TestBrowserLoginWindow(t *testing.T) {
	chromiumPath(t)
	display := startXvfb(t)
	var loginHits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<title>Shop</title><h1>Shop</h1>")
	})
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		loginHits.Add(1)
		io.WriteString(w, "<title>Sign in</title><input type=password aria-label=Password>")
	})
	site := httptest.NewServer(mux)
	defer site.Close()
	addr := strings.TrimPrefix(site.URL, "http://")

	home := initHome(t)
	autonomousMaster(t, home)
	appendFile(t, filepath.Join(home, "config.yaml"), "\nbrowser_enabled: true\n")
	appendFile(t, filepath.Join(home, "agent.yaml"), "\nbrowser: read\nbrowser_hosts: [\"127.0.0.1\"]\n")
	script := writeScript(t, `
- tool_calls:
    - name: browser_navigate
      arguments: {url: "`+site.URL+`/"}
- text: "one"
- tool_calls:
    - name: browser_snapshot
      arguments: {}
- text: "two"
- tool_calls:
    - name: browser_navigate
      arguments: {url: "`+site.URL+`/"}
- text: "three"
`)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+script, "CREW_TEST_ALLOW_ADDRS="+addr)
	first := turnResult(t, s, "one")
	if !strings.Contains(first, "Title: Shop") {
		t.Fatalf("first navigate:\n%s", first)
	}

	login := exec.Command(crewBin, "browser", "login", "master", site.URL+"/login")
	login.Env = append(os.Environ(), "CREW_HOME="+home, "DISPLAY="+display, "CREW_TEST_ALLOW_ADDRS="+addr)
	out := &lockedBuffer{}
	login.Stdout, login.Stderr = out, out
	if err := login.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- login.Wait() }()
	t.Cleanup(func() {
		if login.ProcessState == nil {
			login.Process.Kill()
			<-done
		}
	})
	eventstest.EventuallyWithin(t, 90*time.Second, "the login window open on the sign-in page", func() bool {
		return strings.Contains(out.String(), "A window is open") && loginHits.Load() > 0
	})
	second := turnResult(t, s, "two")
	if !strings.Contains(second, "crew browser login") || !strings.Contains(second, "refuse") {
		t.Errorf("browser tool during login:\n%s", second)
	}
	// The owner closes the window: Chromium exits, and so does login.
	chromium := childOf(login.Process.Pid)
	if chromium == 0 {
		t.Fatalf("no Chromium under crew browser login\n%s", out)
	}
	if p, err := os.FindProcess(chromium); err == nil {
		p.Signal(os.Interrupt)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("crew browser login: %v\n%s", err, out)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("crew browser login did not end with its window\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(home, "browser", "master.login")); !os.IsNotExist(err) {
		t.Errorf("login marker left: %v", err)
	}
	third := turnResult(t, s, "three")
	if !strings.Contains(third, "Title: Shop") {
		t.Errorf("navigate after login:\n%s\n%s", third, out)
	}
	s.stop(t)
}

// turnResult posts a message and returns the last tool result of the
// turn, which ends with the script's reply want.
func turnResult(t *testing.T, s *server, want string) string {
	t.Helper()
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "go " + want})
	c := waitConv(t, s.url, acc["conversation_id"].(string), "answered "+want, func(c convView) bool {
		return settled(c) && len(c.History) > 0 && c.History[len(c.History)-1].Text == want
	})
	for i := len(c.History) - 1; i >= 0; i-- {
		if c.History[i].Role == "tool" {
			return c.History[i].Text
		}
	}
	t.Fatalf("no tool result before %q", want)
	return ""
}
