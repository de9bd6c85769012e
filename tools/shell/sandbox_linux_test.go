package shell

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// facilities returns the facilities to test: each way of creating the
// namespaces that works here (as root, and in a user namespace). CI
// machines are expected to support at least one.
func facilities(t *testing.T) map[string]facility {
	t.Helper()
	box := newSandbox(t)
	f := box.probed()
	if f.abiErr != nil {
		t.Skipf("Landlock unavailable here: %v", f.abiErr)
	}
	out := map[string]facility{}
	for name, m := range map[string]nsMode{"root": nsRoot, "userns": nsUser} {
		try := facility{abi: f.abi, ns: m}
		if _, err := box.run(t.Context(), Command{Script: "exit 0", Dir: "/", Sandbox: &Policy{}}, try); err == nil {
			out[name] = try
		}
	}
	if len(out) == 0 {
		t.Skipf("no namespace mode works here: %v", f.nsErr)
	}
	return out
}

func TestSandboxConfinesWrites(t *testing.T) {
	box := newSandbox(t)
	for name, f := range facilities(t) {
		t.Run(name, func(t *testing.T) {
			ws, extra, outside := t.TempDir(), t.TempDir(), t.TempDir()
			pol := &Policy{WritePaths: []string{ws, extra}}
			tests := []struct {
				script string
				ok     bool
				file   string // must exist afterwards iff ok
			}{
				{"echo x > in.txt", true, filepath.Join(ws, "in.txt")},
				{"mkdir -p a/b && echo x > a/b/c.txt", true, filepath.Join(ws, "a/b/c.txt")},
				{"echo x > " + extra + "/e.txt", true, filepath.Join(extra, "e.txt")},
				{"echo x > \"$TMPDIR/t.txt\" && cat \"$TMPDIR/t.txt\"", true, ""},
				{"echo x > /dev/null", true, ""},
				{"echo x > " + outside + "/out.txt", false, filepath.Join(outside, "out.txt")},
				{"mkdir " + outside + "/d", false, filepath.Join(outside, "d")},
				{"ln -s /etc/passwd " + outside + "/l", false, filepath.Join(outside, "l")},
				{"mv in.txt " + outside + "/moved.txt", false, filepath.Join(outside, "moved.txt")},
			}
			for _, tt := range tests {
				out, err := box.run(t.Context(), Command{Script: tt.script, Dir: ws, Env: Environ(os.Environ()), Sandbox: pol}, f)
				if err != nil {
					t.Fatalf("%q: %v", tt.script, err)
				}
				if got := out.ExitCode == 0; got != tt.ok {
					t.Errorf("%q: exit %d (%s), want success %v", tt.script, out.ExitCode, out.Text, tt.ok)
				}
				if tt.file != "" {
					if _, err := os.Lstat(tt.file); (err == nil) != tt.ok {
						t.Errorf("%q: %s exists=%v, want %v", tt.script, tt.file, err == nil, tt.ok)
					}
				}
			}
			if _, err := os.Stat(filepath.Join(ws, "in.txt")); err != nil {
				t.Errorf("a refused mv still moved the file: %v", err)
			}
		})
	}
}

// TestSandboxBlocksNetwork: no command reaches a listener on the host's
// loopback directly, with network or without, sandboxed or not; a command
// with network finds the crew's proxy at ProxyAddr in its own namespace,
// one without network finds nothing there.
func TestSandboxBlocksNetwork(t *testing.T) {
	box := newSandbox(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dial := func(f facility, addr string, pol *Policy) Output {
		t.Helper()
		env := append(Environ(os.Environ()), "CREW_SHELL_HELPER=connect", "GORACE=atexit_sleep_ms=0", "CREW_SHELL_ADDR="+addr)
		ws := t.TempDir()
		if pol != nil {
			pol.WritePaths = []string{ws}
		}
		out, err := box.run(t.Context(), Command{Script: strconv.Quote(self), Dir: ws, Env: env, Sandbox: pol}, f)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for name, f := range facilities(t) {
		t.Run(name, func(t *testing.T) {
			for pname, pol := range map[string]func() *Policy{
				"unsandboxed":            func() *Policy { return nil },
				"sandboxed with network": func() *Policy { return &Policy{Network: true} },
				"without network":        func() *Policy { return &Policy{} },
			} {
				if out := dial(f, l.Addr().String(), pol()); out.ExitCode == 0 || !strings.Contains(out.Text, "connect:") {
					t.Errorf("%s: the host's loopback listener %s reached: %+v", pname, l.Addr(), out)
				}
				out := dial(f, ProxyAddr, pol())
				if withNet := pol() == nil || pol().Network; withNet != (out.ExitCode == 0) {
					t.Errorf("%s: the proxy at %s: %+v, want connected %v", pname, ProxyAddr, out, withNet)
				}
			}
		})
	}
}

func TestSandboxKeepsOwnLoopback(t *testing.T) {
	box := newSandbox(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := append(Environ(os.Environ()), "CREW_SHELL_HELPER=loopback", "GORACE=atexit_sleep_ms=0")
	for name, f := range facilities(t) {
		t.Run(name, func(t *testing.T) {
			out, err := box.run(t.Context(), Command{Script: strconv.Quote(self), Dir: "/", Env: env, Sandbox: &Policy{}}, f)
			if err != nil || out.ExitCode != 0 {
				t.Errorf("loopback inside the sandbox: %v, %+v", err, out)
			}
		})
	}
}

func TestSandboxCannotSignalOutside(t *testing.T) {
	box := newSandbox(t)
	for name, f := range facilities(t) {
		if f.abi < 6 {
			t.Skipf("Landlock ABI %d has no signal scope", f.abi)
		}
		t.Run(name, func(t *testing.T) {
			// The harness is out of sight (PID namespace); the command's
			// init is visible but outside the Landlock domain: an
			// unsandboxed command may signal it, a sandboxed one not.
			for _, script := range []string{"kill -0 " + strconv.Itoa(os.Getpid()), "kill -0 1"} {
				out, err := box.run(t.Context(), Command{Script: script, Dir: "/", Sandbox: &Policy{Network: true}}, f)
				if err != nil || out.ExitCode == 0 {
					t.Errorf("%q from the sandbox: %v, %+v; want refused", script, err, out)
				}
			}
			if out, err := box.run(t.Context(), Command{Script: "kill -0 1", Dir: "/"}, f); err != nil || out.ExitCode != 0 {
				t.Errorf("kill -0 1 unsandboxed: %v, %+v; want allowed", err, out)
			}
		})
	}
}

// The restrictions live on a thread that dies: the test process itself must
// stay free to write anywhere, from any goroutine.
func TestSandboxDoesNotRestrictCaller(t *testing.T) {
	box := newSandbox(t)
	for _, f := range facilities(t) {
		for range 5 {
			if _, err := box.run(t.Context(), Command{Script: "true", Dir: "/", Sandbox: &Policy{}}, f); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), []byte("x"), 0o600); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

func TestSandboxFailsClosed(t *testing.T) {
	box := newSandbox(t)
	marker := filepath.Join(t.TempDir(), "ran")
	ns := box.probed().ns
	if ns == nsNone {
		t.Skip("no namespaces here")
	}
	tests := []struct {
		name string
		f    facility
		pol  *Policy
		want error
		view *View
	}{
		{"no landlock", facility{ns: ns, abiErr: errors.New("ENOSYS")}, &Policy{Network: true}, ErrNoSandbox, nil},
		{"no namespaces, sandboxed", facility{nsErr: errors.New("EPERM")}, &Policy{}, ErrNoIsolation, nil},
		{"no namespaces", facility{nsErr: errors.New("EPERM")}, nil, ErrNoIsolation, nil},
		// A view that cannot be mounted fails inside the child: still
		// refused, nothing ran.
		{"view fails in the child", facility{ns: ns}, nil, ErrNoIsolation, &View{Home: "relative/home"}},
	}
	for _, tt := range tests {
		_, err := box.run(t.Context(), Command{Script: "touch " + marker, Dir: "/", Sandbox: tt.pol, View: tt.view}, tt.f)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s: the command ran", tt.name)
		}
	}
}

func TestProtectionsAreListed(t *testing.T) {
	box := newSandbox(t)
	want := []string{"mount namespace", "PID namespace", "Landlock", "network namespace", "Unix-socket block", "shell network"}
	ps := box.Protections()
	if len(ps) != len(want) {
		t.Fatalf("protections %+v", ps)
	}
	for i, p := range ps {
		t.Logf("%s: %s", p.Name, p.Detail)
		if p.Name != want[i] || p.Detail == "" || strings.HasPrefix(p.Detail, "yes") != p.OK {
			t.Errorf("protection %d = %+v, want %s with a detail that agrees with OK", i, p, want[i])
		}
	}
	// Where the kernel gives nothing, each says no, why, and what is refused.
	for _, p := range box.protections(facility{nsErr: errors.New("user namespaces: EPERM"), abiErr: errors.New("ENOSYS")}) {
		if p.OK || !strings.HasPrefix(p.Detail, "no (") || !strings.Contains(p.Detail, "refused") {
			t.Errorf("%s without kernel support: %+v", p.Name, p)
		}
	}
	// This machine, and CI, give every one of them.
	if box.probed().ns != nsNone && box.probed().abiErr == nil {
		for _, p := range ps {
			if !p.OK {
				t.Errorf("%s missing: %s", p.Name, p.Detail)
			}
		}
	}
}

func TestSandboxStandardStreams(t *testing.T) {
	box := newSandbox(t)
	for name, f := range facilities(t) {
		t.Run(name, func(t *testing.T) {
			out, err := box.run(t.Context(), Command{Script: "echo a > /dev/stdout; echo b >/dev/stderr; echo c >/proc/self/fd/1; echo d | cat", Dir: "/", Sandbox: &Policy{}}, f)
			if err != nil || out.Text != "a\nb\nc\nd\n" || out.ExitCode != 0 {
				t.Errorf("got %+v, %v", out, err)
			}
		})
	}
}

func TestNilEnvInheritsNothing(t *testing.T) {
	box := newSandbox(t)
	t.Setenv("CREW_TEST_SECRET", "s3cret")
	out, err := box.Run(t.Context(), Command{Script: "echo \"[$CREW_TEST_SECRET]\"", Dir: "/"})
	if err != nil || out.Text != "[]\n" {
		t.Errorf("got %+v, %v", out, err)
	}
}

// TestExecRunsAProgramWithTheSameProtections: a program started with Exec
// (no shell in between) is confined like a command line — its writes end
// at the policy's paths, it has no network — and Stdout takes its output
// while Output.Text keeps its standard error.
func TestExecRunsAProgramWithTheSameProtections(t *testing.T) {
	box := newSandbox(t)
	for name, f := range facilities(t) {
		t.Run(name, func(t *testing.T) {
			ws, outside := t.TempDir(), t.TempDir()
			var stdout strings.Builder
			out, err := box.run(t.Context(), Command{
				Exec: []string{"sh", "-c", `echo in > in.txt; echo out > "$1/out.txt"; echo to-stdout; echo to-stderr >&2`, "sh", outside},
				Dir:  ws, Env: Environ(os.Environ()), Stdout: &stdout, Sandbox: &Policy{WritePaths: []string{ws}},
			}, f)
			if err != nil {
				t.Fatal(err)
			}
			if stdout.String() != "to-stdout\n" || !strings.Contains(out.Text, "to-stderr") || strings.Contains(out.Text, "to-stdout") {
				t.Errorf("stdout %q, text %q", stdout.String(), out.Text)
			}
			if _, err := os.Stat(filepath.Join(ws, "in.txt")); err != nil {
				t.Errorf("write inside refused: %v", err)
			}
			if _, err := os.Stat(filepath.Join(outside, "out.txt")); err == nil {
				t.Error("a program started with Exec wrote outside its write paths")
			}
			out, err = box.run(t.Context(), Command{Exec: []string{"no-such-program-here"}, Dir: ws, Env: Environ(os.Environ())}, f)
			if err == nil {
				t.Errorf("a missing program ran: %+v", out)
			}
		})
	}
}
