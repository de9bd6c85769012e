package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// R-HOME-3: bad config stops `crew serve` with one line naming
// file:line:col (or the file, when it is missing or unreadable), and
// changes nothing.
func TestServeRefusesBadConfigWithOneLine(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(t *testing.T, home string)
		want   string   // regexp on stderr's single line
		args   []string // default: serve
	}{
		{"syntax error", func(t *testing.T, home string) {
			appendFile(t, filepath.Join(home, "config.yaml"), "listen: [127.0.0.1:1\n")
		}, `^crew serve: \S+/config\.yaml:\d+:\d+: `, nil},
		{"unknown key", func(t *testing.T, home string) {
			appendFile(t, filepath.Join(home, "config.yaml"), "aproval_ttl_seconds: 60\n")
		}, `^crew serve: \S+/config\.yaml:\d+:1: unknown key "aproval_ttl_seconds" \(did you mean "approval_ttl_seconds"\?\)$`, nil},
		{"wrong type", func(t *testing.T, home string) {
			appendFile(t, filepath.Join(home, "config.yaml"), "auth_token: [a, b]\n")
		}, `^crew serve: \S+/config\.yaml:\d+:\d+: .*auth_token`, nil},
		// config.yaml has no unbuilt key left (home TestUnbuiltKeysRefused
		// covers agent.yaml's); a browser setting of the wrong type stops
		// serve like any other.
		{"browser_enabled not a boolean", func(t *testing.T, home string) {
			appendFile(t, filepath.Join(home, "config.yaml"), "browser_enabled: yes\n")
		}, `^crew serve: \S+/config\.yaml:\d+:18: browser_enabled: must be true or false, got "yes"$`, nil},
		// serve creates a missing home; the other commands say it is missing.
		{"missing file", func(t *testing.T, home string) {
			os.Remove(filepath.Join(home, "config.yaml"))
		}, `^crew export: \S+/config\.yaml: missing \(run "crew init"\)$`, []string{"export", "c1"}},
		{"unreadable env", func(t *testing.T, home string) {
			os.Chmod(filepath.Join(home, "env"), 0o644)
		}, `^crew serve: \S+/env: mode 0644 is readable by group/others; run: chmod 600 \S+/env$`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			if _, _, code := crew(t, home, "init"); code != 0 {
				t.Fatal("init failed")
			}
			c.break_(t, home)
			args := c.args
			if args == nil {
				args = []string{"serve", "--listen", "127.0.0.1:0"}
			}
			_, stderr, code := crew(t, home, args...)
			if code != 1 {
				t.Fatalf("exit code %d, want 1; stderr %q", code, stderr)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 || !regexp.MustCompile(c.want).MatchString(lines[0]) {
				t.Errorf("stderr = %q, want one line matching %s", stderr, c.want)
			}
			if _, err := os.Stat(filepath.Join(home, "data", "nats")); err == nil {
				t.Errorf("a refused start created the event store")
			}
		})
	}
}

// One broken agent is reported and skipped; the server still starts.
func TestServeSkipsBrokenAgent(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	if _, _, code := crew(t, home, "init"); code != 0 {
		t.Fatal("init failed")
	}
	dir := filepath.Join(home, "agents", "coach")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte("name: Coach\nmax_step: 3\n"), 0o600)
	s := startServe(t, home)
	if got := s.stderr.String(); !regexp.MustCompile(`skipped agent: \S+/agents/coach/agent\.yaml:2:1: unknown key "max_step" \(did you mean "max_steps"\?\)`).MatchString(got) {
		t.Errorf("stderr does not report the broken agent:\n%s", got)
	}
	s.stop(t)
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}
