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
