package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
)

// echo answers every request with its op, so the socket tests need no
// display.
type echo struct{}

func (echo) handle(r wire.Request) wire.Answer { return wire.Answer{Done: "op " + r.Op} }

// serveEcho listens in home and serves echo until the test ends.
func serveEcho(t *testing.T, home string) *server {
	t.Helper()
	srv, err := listen(home, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.serve(ctx, echo{}) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv
}

// TestHelperRefusesAFolderOthersCanWrite (R-DSK): a socket folder the
// group may write could have its socket replaced; the helper does not
// start, says why, and makes no socket.
func TestHelperRefusesAFolderOthersCanWrite(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "desktop")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o770); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := run([]string{"--home", home}, io.Discard, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1; stderr %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "writable by others") {
		t.Fatalf("stderr %q does not say the folder is writable by others", stderr.String())
	}
	if _, err := os.Lstat(filepath.Join(dir, "sock")); err == nil {
		t.Fatal("a socket was made in the unsafe folder")
	}
}

// TestHelperMakesAPrivateFolderAndSocket: a fresh home gets desktop/ with
// mode 0700 and a socket of mode 0600, and a request line gets one
// answer line; a line that is not the protocol gets a bad_request answer.
func TestHelperMakesAPrivateFolderAndSocket(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	srv := serveEcho(t, home)
	for path, want := range map[string]os.FileMode{filepath.Dir(srv.path): 0o700, srv.path: 0o600} {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %04o, want %04o", path, fi.Mode().Perm(), want)
		}
	}
	ans, err := wire.Call(t.Context(), srv.path, wire.Request{Op: wire.OpState})
	if err != nil || ans.Done != "op state" {
		t.Fatalf("call: %+v %v", ans, err)
	}
	c, err := net.Dial("unix", srv.path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte(`{"op":"state","bogus":1}` + "\n"))
	var got wire.Answer
	if err := json.NewDecoder(c).Decode(&got); err != nil || got.Code != wire.CodeBadRequest {
		t.Fatalf("unknown field: %+v %v", got, err)
	}
	if _, err := listen(home, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "already serving") {
		t.Fatalf("a second helper on the same home: %v", err)
	}
}

// peerEnv names the socket a re-executed test binary connects to as
// another uid.
const peerEnv = "CREW_DESKTOP_PEER_SOCKET"

// TestHelperRefusesAPeerOfAnotherUID (R-DSK): even when the socket is
// reachable (a folder and socket opened to everyone by mistake), a client
// of another uid gets a refusal and no answer to its request. It needs
// root, to run the client as nobody.
func TestHelperRefusesAPeerOfAnotherUID(t *testing.T) {
	if sock := os.Getenv(peerEnv); sock != "" {
		peerClient(sock) // the re-executed child
		return
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another uid (uid 65534)")
	}
	base, err := os.MkdirTemp("", "crew-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	home := filepath.Join(base, "home")
	srv := serveEcho(t, home)
	for _, p := range []string{base, home, filepath.Dir(srv.path)} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(srv.path, 0o666); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "peer.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestHelperRefusesAPeerOfAnotherUID$")
	cmd.Env = append(os.Environ(), peerEnv+"="+srv.path)
	cmd.Dir = base
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("peer: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"code":"not_allowed"`) || !strings.Contains(string(out), "peer uid 65534") || strings.Contains(string(out), "op state") {
		t.Fatalf("the other uid's answer:\n%s\nwant a refusal naming uid 65534", out)
	}
}

// peerClient connects without the client's own checks (it is the
// attacker) and prints the answer line.
func peerClient(sock string) {
	c, err := net.Dial("unix", sock)
	if err != nil {
		os.Stdout.WriteString("dial: " + err.Error() + "\n")
		return
	}
	defer c.Close()
	c.Write([]byte(`{"op":"state"}` + "\n"))
	line, _ := bufio.NewReader(c).ReadString('\n')
	os.Stdout.WriteString("answer: " + line)
}
