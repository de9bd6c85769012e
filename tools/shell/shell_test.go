package shell

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary double as a small network client run by
// sandboxed commands, so the tests need no nc or bash.
func TestMain(m *testing.M) {
	switch os.Getenv("CREW_SHELL_HELPER") {
	case "":
		os.Exit(m.Run())
	case "connect":
		c, err := net.DialTimeout("tcp", os.Getenv("CREW_SHELL_ADDR"), 2*time.Second)
		if err != nil {
			fmt.Println("connect:", err)
			os.Exit(3)
		}
		c.Close()
		fmt.Println("connected")
		os.Exit(0)
	case "mptcp":
		// Multipath TCP falls back to plain TCP with a TCP server, and
		// Landlock's port rules do not see it.
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 262)
		if err != nil {
			fmt.Println("socket:", err)
			os.Exit(3)
		}
		host, port, _ := net.SplitHostPort(os.Getenv("CREW_SHELL_ADDR"))
		p, _ := strconv.Atoi(port)
		sa := &syscall.SockaddrInet4{Port: p}
		copy(sa.Addr[:], net.ParseIP(host).To4())
		if err := syscall.Connect(fd, sa); err != nil {
			fmt.Println("connect:", err)
			os.Exit(3)
		}
		fmt.Println("connected")
		os.Exit(0)
	case "fastopen":
		// TCP Fast Open connects inside sendto(MSG_FASTOPEN), without a
		// connect(2) for Landlock's port rules to see.
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
		if err != nil {
			fmt.Println("socket:", err)
			os.Exit(3)
		}
		host, port, _ := net.SplitHostPort(os.Getenv("CREW_SHELL_ADDR"))
		p, _ := strconv.Atoi(port)
		sa := &syscall.SockaddrInet4{Port: p}
		copy(sa.Addr[:], net.ParseIP(host).To4())
		if err := syscall.Sendto(fd, []byte("GET / HTTP/1.0\r\n\r\n"), 0x20000000, sa); err != nil {
			fmt.Println("connect:", err)
			os.Exit(3)
		}
		fmt.Println("connected")
		os.Exit(0)
	case "unix":
		// Connect to a Unix socket (a leading @ is abstract), then check
		// that the socket pairs a program may need still work while the
		// kinds that could address an outside socket do not.
		c, err := net.DialTimeout("unix", os.Getenv("CREW_SHELL_ADDR"), 2*time.Second)
		if err != nil {
			fmt.Println("connect:", err)
			os.Exit(3)
		}
		c.Close()
		fmt.Println("connected")
		os.Exit(0)
	case "socketpair":
		_, serr := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		_, derr := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_DGRAM, 0)
		fmt.Printf("stream %v, dgram %v\n", serr, derr)
		os.Exit(0)
	case "loopback":
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Println("listen:", err)
			os.Exit(3)
		}
		c, err := net.DialTimeout("tcp", l.Addr().String(), 2*time.Second)
		if err != nil {
			fmt.Println("connect:", err)
			os.Exit(3)
		}
		c.Close()
		fmt.Println("loopback ok")
		os.Exit(0)
	}
	os.Exit(2)
}

func TestRunOutputAndExitCode(t *testing.T) {
	box := newSandbox(t)
	tests := []struct {
		script   string
		wantText string
		wantCode int
	}{
		{"echo out; echo err >&2; exit 3", "out\nerr\n", 3},
		{"printf 'a\\nb'", "a\nb", 0},
		{"pwd", "", 0},
		{"echo $CREW_SECRET_KEY", "\n", 0},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		env := Environ(append(os.Environ(), "CREW_SECRET_KEY=hunter2"))
		out, err := box.Run(t.Context(), Command{Script: tt.script, Dir: dir, Env: env})
		if err != nil {
			t.Fatalf("%q: %v", tt.script, err)
		}
		want := tt.wantText
		if tt.script == "pwd" {
			want = dir + "\n"
		}
		if out.Text != want || out.ExitCode != tt.wantCode {
			t.Errorf("%q: got %q, exit %d; want %q, exit %d", tt.script, out.Text, out.ExitCode, want, tt.wantCode)
		}
	}
}

func TestEnvironDropsSecrets(t *testing.T) {
	got := strings.Join(Environ([]string{"PATH=/bin", "OPENROUTER_API_KEY=k", "LC_ALL=C", "AWS_SECRET_ACCESS_KEY=s", "HOME=/h"}), " ")
	for _, want := range []string{"PATH=/bin", "LC_ALL=C", "HOME=/h", "TERM=dumb"} {
		if !strings.Contains(got, want) {
			t.Errorf("Environ lost %s: %s", want, got)
		}
	}
	if strings.Contains(got, "KEY") {
		t.Errorf("Environ kept a secret: %s", got)
	}
}

func TestCaptureKeepsHeadAndTail(t *testing.T) {
	c := newCapture(4, 4)
	for _, s := range []string{"ab", "cdef", "ghij", "klmn"} {
		c.Write([]byte(s))
	}
	got, dropped := c.text()
	if dropped != 6 || !strings.HasPrefix(got, "abcd") || !strings.HasSuffix(got, "klmn") || !strings.Contains(got, "6 bytes of output dropped") {
		t.Errorf("got %q, dropped %d", got, dropped)
	}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// waitFile waits until path exists and is not empty.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing in %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// procsIn returns the live processes, by host pid, whose working directory
// is dir. A command's pids are those of its own PID namespace, so tests find
// its processes from outside this way.
func procsIn(dir string) []int {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil && (cwd == real || cwd == dir) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitGone waits until no process runs in dir.
func waitGone(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := procsIn(dir)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("processes %v outlived their command", pids)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	box := newSandbox(t)
	dir := t.TempDir()
	start := time.Now()
	out, err := box.Run(t.Context(), Command{
		Script:  "sleep 100 & echo $! > pid; wait",
		Dir:     dir,
		Timeout: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !out.TimedOut || out.ExitCode != -1 || out.Signal != "killed" {
		t.Errorf("got %+v, want a timed out, killed command", out)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run took %v after a 300ms timeout", d)
	}
	waitGone(t, dir)
}

func TestContextCancelKillsProcessGroup(t *testing.T) {
	box := newSandbox(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := box.Run(ctx, Command{Script: "sleep 100 & echo $! > pid; wait", Dir: dir})
		done <- err
	}()
	waitFile(t, filepath.Join(dir, "pid"))
	if len(procsIn(dir)) == 0 {
		t.Fatal("the running command is not found from outside")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	waitGone(t, dir)
}

// graceStop is a stop's cause as loop.Background gives it: SIGTERM first.
type graceStop struct{}

func (graceStop) Error() string            { return "stopped" }
func (graceStop) TermGrace() time.Duration { return 100 * time.Millisecond }

// A command whose stop came before it started (loop.Background: a task
// stopped between its start and Run) is killed as it starts: Run answers
// the cut, not the command's end, and nothing of it is left.
func TestRunStoppedBeforeItStartsIsKilled(t *testing.T) {
	box := newSandbox(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(graceStop{})
	out, err := box.Run(ctx, Command{Script: "sleep 100 & echo $! > pid; wait", Dir: dir})
	if !errors.Is(err, context.Canceled) || out.ExitCode != -1 {
		t.Errorf("Run = %+v, %v; want it cut (context.Canceled, exit -1)", out, err)
	}
	waitGone(t, dir)
}

func TestLeftoverBackgroundProcessIsKilled(t *testing.T) {
	box := newSandbox(t)
	dir := t.TempDir()
	start := time.Now()
	out, err := box.Run(t.Context(), Command{Script: "sleep 100 & echo $! > pid; echo done", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "done\n" || out.ExitCode != 0 || time.Since(start) > 5*time.Second {
		t.Errorf("got %+v after %v", out, time.Since(start))
	}
	waitGone(t, dir)
}

// A process that leaves the command's process group (setsid) still dies
// with the command: its PID namespace ends when the shell exits. So it
// cannot hold the output pipe open either.
func TestEscapedProcessDiesWithCommand(t *testing.T) {
	box := newSandbox(t)
	dir := t.TempDir()
	start := time.Now()
	out, err := box.Run(t.Context(), Command{Script: "setsid sh -c 'echo $$ > pid; exec sleep 100' & while [ ! -s pid ]; do sleep 0.01; done; echo started", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Text, "started") || time.Since(start) > 5*time.Second {
		t.Errorf("got %+v after %v", out, time.Since(start))
	}
	waitGone(t, dir)
}

// newSandbox is a Sandbox of the default network policy, the test's own.
func newSandbox(t testing.TB) *Sandbox {
	t.Helper()
	s, err := New(Network{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
