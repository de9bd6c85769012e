package shell

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// listenBelow listens on a free loopback port below the ephemeral range,
// which the guard leaves open unless named.
func listenBelow(t *testing.T, lo int) net.Listener {
	t.Helper()
	for p := 20000 + os.Getpid()%5000; p < lo; p += 7 {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err == nil {
			t.Cleanup(func() { l.Close() })
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
			return l
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return nil
}

func portOf(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }

// TestPortGuardKeepsCommandsFromTheServer: once the server guards its
// ports, a networked command — unsandboxed or sandboxed with network, in
// every namespace mode — cannot open a TCP connection to a guarded port
// or to a port of the ephemeral range, by Go's dialer, bash's /dev/tcp or
// an MPTCP socket (which Landlock's port rules alone let through), while
// another port still connects and the server itself is not restricted.
func TestPortGuardKeepsCommandsFromTheServer(t *testing.T) {
	lo, _ := ephemeralRange()
	server := listenBelow(t, lo) // stands for the server's HTTP port
	other := listenBelow(t, lo)  // a port nobody guards
	eph := listenBelow(t, 1<<16) // retried below: a port of the range
	if p := portOf(eph); p < lo {
		eph.Close()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		eph = l
	}
	if err := GuardPorts(portOf(server)); err != nil {
		t.Fatalf("GuardPorts on a kernel with Landlock ABI %d: %v", probed().abi, err)
	}
	t.Cleanup(unguard)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, bashErr := exec.LookPath("bash")
	dir := t.TempDir()
	dial := func(f facility, helper string, l net.Listener, pol *Policy) Output {
		env := append(Environ(os.Environ()), "CREW_SHELL_HELPER="+helper, "GORACE=atexit_sleep_ms=0", "CREW_SHELL_ADDR="+l.Addr().String())
		out, err := run(t.Context(), Command{Script: strconv.Quote(self), Dir: dir, Env: env, Sandbox: pol}, f)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for name, f := range modes(t) {
		f.abi = probed().abi
		for pname, pol := range map[string]*Policy{"unsandboxed": nil, "sandboxed with network": {Network: true, WritePaths: []string{dir}}} {
			t.Run(name+"/"+pname, func(t *testing.T) {
				if out := dial(f, "connect", other, pol); out.ExitCode != 0 {
					t.Fatalf("an unguarded port: %+v, want connected", out)
				}
				for lname, l := range map[string]net.Listener{"server port": server, "ephemeral port": eph} {
					for _, helper := range []string{"connect", "mptcp", "fastopen"} {
						out := dial(f, helper, l, pol)
						if out.ExitCode == 0 || !strings.Contains(out.Text, "permission denied") && !strings.Contains(out.Text, "not supported") {
							t.Errorf("%s by %s: %+v, want refused", lname, helper, out)
						}
					}
				}
				if bashErr == nil {
					script := fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d' && echo OPEN || echo REFUSED", portOf(server))
					out, err := run(t.Context(), Command{Script: script, Dir: dir, Env: Environ(os.Environ()), Sandbox: pol}, f)
					if err != nil || !strings.Contains(out.Text, "REFUSED") {
						t.Errorf("bash /dev/tcp: %+v %v, want refused", out, err)
					}
				}
			})
		}
	}
	if c, err := net.Dial("tcp", server.Addr().String()); err != nil {
		t.Errorf("the server itself is restricted: %v", err)
	} else {
		c.Close()
	}
}

// TestPortGuardFailsClosed: where the guard cannot be enforced, a
// networked command is refused with the reason and nothing runs, while a
// command without network (its own network namespace) still runs.
func TestPortGuardFailsClosed(t *testing.T) {
	guardMu.Lock()
	guard = &netGuard{err: fmt.Errorf("%w: Landlock ABI 3 has no TCP port rules", ErrNoSandbox)}
	guardMu.Unlock()
	t.Cleanup(unguard)
	dir := t.TempDir()
	marker := dir + "/ran"
	for _, pol := range []*Policy{nil, {Network: true, WritePaths: []string{dir}}} {
		_, err := Run(t.Context(), Command{Script: "touch " + marker, Dir: dir, Env: Environ(os.Environ()), Sandbox: pol})
		if !errors.Is(err, ErrNoSandbox) || !strings.Contains(err.Error(), "TCP port rules") {
			t.Errorf("networked command under a broken guard: %v, want ErrNoSandbox with the reason", err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the command ran")
		}
	}
	out, err := Run(t.Context(), Command{Script: "touch " + marker + " && echo ran", Dir: dir, Env: Environ(os.Environ()), Sandbox: &Policy{WritePaths: []string{dir}}})
	if err != nil || !strings.Contains(out.Text, "ran") {
		t.Errorf("a command without network: %+v %v, want it to run", out, err)
	}
}

// BenchmarkRunNetworked is a networked command without the port guard,
// the baseline of BenchmarkRunNetworkedGuarded.
func BenchmarkRunNetworked(b *testing.B) {
	for b.Loop() {
		if _, err := Run(b.Context(), Command{Script: "exit 0", Dir: "/"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunNetworkedGuarded is the same command under the guard: the
// cost is stage 2 restricting itself with the prebuilt ruleset.
func BenchmarkRunNetworkedGuarded(b *testing.B) {
	if err := GuardPorts(7420); err != nil {
		b.Skip(err)
	}
	b.Cleanup(unguard)
	for b.Loop() {
		if _, err := Run(b.Context(), Command{Script: "exit 0", Dir: "/"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGuardPorts is building the ruleset, once per server start.
func BenchmarkGuardPorts(b *testing.B) {
	b.Cleanup(unguard)
	for b.Loop() {
		if err := GuardPorts(7420); err != nil {
			b.Skip(err)
		}
	}
}
