package home

import (
	"os"
	"path/filepath"
	"testing"
)

// newHome is an initialised home in a temporary directory.
func newHome(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := Init(dir); err != nil {
		t.Fatalf("Init: %v", err)
	}
	// A bare home: most tests add their own agents. Init's examples are
	// tested in TestInitInstallsExampleAgents.
	for _, name := range Examples {
		if err := os.RemoveAll(filepath.Join(dir, "agents", name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustLoad(t *testing.T, dir string) *Home {
	t.Helper()
	h, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return h
}
