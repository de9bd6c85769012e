package app

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeAgent writes agents/<id>/agent.yaml under the home, with a new size
// and a later time so a reload sees it.
func writeAgent(t *testing.T, home, id, yaml string) {
	t.Helper()
	dir := filepath.Join(home, "agents", id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Duration(len(yaml)) * time.Second)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
}
