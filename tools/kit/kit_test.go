package kit

import (
	"os"
	"path/filepath"
	"testing"
)

// write creates the file at dir/rel with content, and its folders.
func write(t *testing.T, dir, rel, content string) string {
	t.Helper()
	path := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// homeAndAgent returns a home and, beneath it, an agent's folder.
func homeAndAgent(t *testing.T) (home, agent string) {
	t.Helper()
	home = t.TempDir()
	agent = filepath.Join(home, "agents", "coder")
	if err := os.MkdirAll(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	return home, agent
}
