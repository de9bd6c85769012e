package tools

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
)

// Every file written for an agent (memory, facts, wiki, spills) goes
// through WriteAtomic, which redacts known secrets (R-X-6).
func TestWriteAtomicRedactsSecrets(t *testing.T) {
	secret := "sk-test-atomic-" + t.Name()
	r := events.NewRedactor()
	r.Add("ATOMIC_TEST_KEY", secret)
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	text := "- 09:00 visible " + secret + " and " + base64.StdEncoding.EncodeToString([]byte(secret)) + "\n"
	if err := WriteAtomic(r, root, "memory/2026-01-01.md", []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "memory", "2026-01-01.md"))
	if want := "- 09:00 visible [redacted:ATOMIC_TEST_KEY] and [redacted:ATOMIC_TEST_KEY]\n"; string(got) != want {
		t.Errorf("file = %q, want %q", got, want)
	}
	rel, err := Spill(r, Env{SpillDir: filepath.Join(dir, "spill", "c1")}, "call_1", strings.Repeat("x", 10)+secret)
	if err != nil {
		t.Fatal(err)
	}
	spilled, _ := os.ReadFile(filepath.Join(dir, rel))
	if string(spilled) != "xxxxxxxxxx[redacted:ATOMIC_TEST_KEY]" {
		t.Errorf("spill = %q", spilled)
	}
}
