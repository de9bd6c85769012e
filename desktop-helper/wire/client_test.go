package wire_test

import (
	"bufio"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
)

// listenIn listens on dir/sock and counts the connections it accepts.
func listenIn(t *testing.T, dir string) (string, *atomic.Int32) {
	t.Helper()
	path := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			bufio.NewReader(c).ReadString('\n') // the request, then the answer
			c.Write([]byte(`{"done":"ok"}` + "\n"))
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return path, &n
}

// TestClientRefusesASocketInAFolderOthersCanWrite (R-DSK): the server
// side does not even connect to a socket whose folder the group can
// write (someone could have put their own socket there).
func TestClientRefusesASocketInAFolderOthersCanWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "desktop")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path, accepted := listenIn(t, dir)
	if ans, err := wire.Call(t.Context(), path, wire.Request{Op: wire.OpState}); err != nil || ans.Done != "ok" {
		t.Fatalf("a safe folder: %+v %v", ans, err)
	}
	for _, mode := range []os.FileMode{0o770, 0o702, 0o777} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		before := accepted.Load()
		_, err := wire.Call(t.Context(), path, wire.Request{Op: wire.OpState})
		if !errors.Is(err, wire.ErrUnsafe) {
			t.Fatalf("mode %04o: %v, want ErrUnsafe", mode, err)
		}
		if accepted.Load() != before {
			t.Fatalf("mode %04o: the client connected anyway", mode)
		}
	}
}

// TestClientRefusesWhatIsNotASocket: a file or a symlink in the socket's
// place is refused.
func TestClientRefusesWhatIsNotASocket(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "sock")
	os.WriteFile(file, nil, 0o600)
	if _, err := wire.Call(t.Context(), file, wire.Request{Op: wire.OpState}); !errors.Is(err, wire.ErrUnsafe) {
		t.Fatalf("a file: %v", err)
	}
	other := t.TempDir()
	real, _ := listenIn(t, other)
	link := filepath.Join(dir, "link")
	os.Symlink(real, link)
	if _, err := wire.Call(t.Context(), link, wire.Request{Op: wire.OpState}); !errors.Is(err, wire.ErrUnsafe) {
		t.Fatalf("a symlink: %v", err)
	}
}

// TestClientSaysTheHelperIsNotRunning: no socket, or a socket nobody
// listens on, is ErrNotRunning.
func TestClientSaysTheHelperIsNotRunning(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sock")
	if _, err := wire.Call(t.Context(), path, wire.Request{Op: wire.OpState}); !errors.Is(err, wire.ErrNotRunning) {
		t.Fatalf("no socket: %v", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := wire.Call(t.Context(), path, wire.Request{Op: wire.OpState}); !errors.Is(err, wire.ErrNotRunning) {
		t.Fatalf("a dead socket: %v", err)
	}
}
