package tools

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestResolve(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{ws + "/sub", outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(outside, "secret"), "s")
	mustWrite(t, filepath.Join(ws, "sub/f.txt"), "f")
	symlink(t, outside, filepath.Join(ws, "out"))                  // dir link pointing out
	symlink(t, "../outside/secret", filepath.Join(ws, "leak"))     // relative file link out
	symlink(t, "sub", filepath.Join(ws, "in"))                     // link staying inside
	symlink(t, filepath.Join(ws, "sub"), filepath.Join(ws, "abs")) // absolute link inside
	symlink(t, filepath.Join(outside, "nothing"), filepath.Join(ws, "dangling"))
	// The workspace itself reached through a symlink.
	wsLink := filepath.Join(base, "wslink")
	symlink(t, ws, wsLink)

	tests := []struct {
		ws, rel string
		want    string // relative to ws; "" means outside
	}{
		{ws, "", "."},
		{ws, ".", "."},
		{ws, "sub/f.txt", "sub/f.txt"},
		{ws, "sub/../sub/f.txt", "sub/f.txt"},
		{ws, "new/dir/file.txt", "new/dir/file.txt"},
		{ws, "in/f.txt", "sub/f.txt"},
		{ws, "abs/f.txt", "sub/f.txt"},
		{ws, filepath.Join(ws, "sub/f.txt"), "sub/f.txt"},
		{ws, filepath.Join(wsLink, "sub/f.txt"), "sub/f.txt"},
		{wsLink, "sub/f.txt", "sub/f.txt"},
		{ws, "in/../../outside/secret", ""},
		{ws, "..", ""},
		{ws, "../outside/secret", ""},
		{ws, "sub/../../outside", ""},
		{ws, "/etc/passwd", ""},
		{ws, filepath.Join(outside, "secret"), ""},
		{ws, "out", ""},
		{ws, "out/secret", ""},
		{ws, "out/new.txt", ""},
		{ws, "leak", ""},
		{ws, "dangling", ""},
	}
	for _, tt := range tests {
		got, err := Resolve(tt.ws, tt.rel)
		if tt.want == "" {
			if err == nil {
				t.Errorf("Resolve(%q) = %q, want refusal", tt.rel, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("Resolve(%q): %v", tt.rel, err)
			continue
		}
		want := filepath.Join(ws, tt.want)
		if got != want {
			t.Errorf("Resolve(%q) = %q, want %q", tt.rel, got, want)
		}
	}
	for _, bad := range []string{"", "relative/ws", filepath.Join(base, "missing")} {
		if _, err := Resolve(bad, "x"); !errors.Is(err, ErrNoWorkspace) {
			t.Errorf("workspace %q: got %v, want ErrNoWorkspace", bad, err)
		}
	}
	if _, err := Resolve(ws, "../x"); !errors.Is(err, ErrOutsideWorkspace) {
		t.Errorf("got %v, want ErrOutsideWorkspace", err)
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// newWorkspace makes a workspace with files (path -> content) and an Env
// for it.
func newWorkspace(t *testing.T, files map[string]string) Env {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		mustWrite(t, filepath.Join(ws, p), c)
	}
	return Env{Workspace: ws, Conversation: "conv1", SpillDir: filepath.Join(base, "spill", "conv1")}
}
