package tools_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

// TestWriteAtomicExactSetsTheMode: the exact writer gives the file perm
// whatever it had before, where WriteAtomic keeps an existing file's mode;
// neither leaves a temp file; and the exact writer writes a known secret as
// given (the home's env file holds them).
func TestWriteAtomicExactSetsTheMode(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, name := range []string{"kept", "exact"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := tools.WriteAtomic(nil, root, "kept", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := tools.WriteAtomicExact(root, "exact", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{"kept": 0o644, "exact": 0o600} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", name, got, want)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != "new" {
			t.Errorf("%s: %q, want the new text", name, b)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("entries %v, want only the two files", entries)
	}
	secret := "sk-test-exact-" + t.Name()
	events.NewRedactor().Add("EXACT_TEST_KEY", secret) // known to a redactor, still written as given
	if err := tools.WriteAtomicExact(root, "env", []byte("KEY="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "env")); string(b) != "KEY="+secret+"\n" {
		t.Errorf("env = %q, want the secret as written", b)
	}
}
