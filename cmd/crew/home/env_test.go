package home

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseEnv(t *testing.T) {
	data := "# comment\n\n  A=1\nexport B = two words # note\nC=\"quoted # not a comment\\n\"\nD='single $x'\nE=\nF=a=b\r\n"
	got, err := parseEnv("env", data)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "1", "B": "two words", "C": "quoted # not a comment\n", "D": "single $x", "E": "", "F": "a=b"}
	if len(got) != len(want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func TestParseEnvErrors(t *testing.T) {
	tests := []struct{ data, want string }{
		{"A=1\nsk-secret-pasted\n", "env:2:1: want KEY=VALUE"},
		{"  1A=x\n", "env:1:3: invalid variable name: want letters, digits and _, not starting with a digit"},
		{"export  K=\"open\n", `env:1:11: K: unterminated quoted value`},
		{"K='a' b\n", "env:1:6: K: unexpected text after the closing quote"},
	}
	for _, tt := range tests {
		_, err := parseEnv("env", tt.data)
		if err == nil || err.Error() != tt.want {
			t.Errorf("parseEnv(%q) = %v, want %s", tt.data, err, tt.want)
		}
	}
}

func TestEnvFileErrors(t *testing.T) {
	dir := newHome(t)
	path := filepath.Join(dir, "env")

	writeFile(t, path, "A=1\nnot a pair\n")
	if _, err := Load(dir); err == nil || err.Error() != path+":2:1: want KEY=VALUE" {
		t.Errorf("malformed line: %v", err)
	}

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	want := path + ": mode 0644 is readable by group/others; run: chmod 600 " + path
	if _, err := Load(dir); err == nil || err.Error() != want {
		t.Errorf("mode 0644: %v\nwant %s", err, want)
	}
}

func TestEnvUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	dir := newHome(t)
	path := filepath.Join(dir, "env")
	if err := os.Chmod(path, 0o000); err != nil {
		t.Fatal(err)
	}
	want := path + ": cannot read: permission denied"
	if _, err := Load(dir); err == nil || err.Error() != want {
		t.Errorf("unreadable env: %v, want %s", err, want)
	}
}

func TestEnvMissingIsEmpty(t *testing.T) {
	dir := newHome(t)
	if err := os.Remove(filepath.Join(dir, "env")); err != nil {
		t.Fatal(err)
	}
	if h := mustLoad(t, dir); len(h.Env) != 0 {
		t.Errorf("Env = %v", h.Env)
	}
}

// MY_AGENT_ROUTES is a setting of the env file like OLLAMA_HOST: doctor
// says it overrides every agent (the override itself: app
// TestEnvFileRoutesOverrideEveryAgent).
func TestEnvFileRoutesShownByDoctor(t *testing.T) {
	dir := newHome(t)
	writeFile(t, filepath.Join(dir, "env"), "MY_AGENT_ROUTES=fake:echo,ollama:qwen3\n")
	h := mustLoad(t, dir)
	if lines := h.Routes(func(string) string { return "" }); len(lines) < 2 || lines[1] != "  MY_AGENT_ROUTES=fake:echo,ollama:qwen3 overrides every agent" {
		t.Errorf("doctor's routes = %q", lines)
	}
}
