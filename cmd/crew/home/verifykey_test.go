package home

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// crew verify takes its key from a key file (the key alone, or an env
// file's CREW_AUDIT_KEY= line), the process environment or the home, in
// that order, and a short key is refused.
func TestVerifyKeySources(t *testing.T) {
	key := NewSecret()
	dir := t.TempDir()
	alone := filepath.Join(dir, "key")
	envFile := filepath.Join(dir, "env")
	os.WriteFile(alone, []byte(key+"\n"), 0o600)
	os.WriteFile(envFile, []byte("# c\nOTHER=x\nexport "+AuditKeyVar+"=\""+key+"\"\n"), 0o600)
	noEnv := func(string) string { return "" }
	for _, c := range []struct {
		name, dir, keyFile string
		getenv             func(string) string
		want, why          string
	}{
		{"key alone", "", alone, noEnv, key, "audit key from " + alone},
		{"env file as key file", "", envFile, noEnv, key, "audit key from " + envFile},
		{"process environment", dir, "", func(string) string { return key }, key, AuditKeyVar + " in the process environment"},
		{"the home", dir, "", noEnv, key, "audit key of " + dir},
		{"no home", "", "", noEnv, "", "checked without the audit key: no home"},
	} {
		got, why, err := VerifyKey(c.dir, c.keyFile, false, c.getenv)
		if err != nil || string(got) != c.want || why != c.why {
			t.Errorf("%s: %q, %q, %v; want %q, %q", c.name, got, why, err, c.want, c.why)
		}
	}
	os.WriteFile(alone, []byte("short\n"), 0o600)
	if _, _, err := VerifyKey("", alone, false, noEnv); err == nil || !strings.Contains(err.Error(), "want at least") {
		t.Errorf("short key: err = %v", err)
	}
	if _, _, err := VerifyKey("", alone, true, noEnv); err == nil {
		t.Error("--no-key with --key-file accepted")
	}
}
