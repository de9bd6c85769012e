package shell

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostSocket is a listening Unix socket the test makes where a host keeps
// its own, answering HTTP with reachedMark.
type hostSocket struct {
	name   string
	path   string
	hidden bool // its name must be out of sight too, not just unreachable
}

const reachedMark = "host-socket-reached"

// listenHTTP serves reachedMark on a Unix socket at path until the test ends.
func listenHTTP(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listen %s: %v", path, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, reachedMark)
	})}
	go srv.Serve(l)
	t.Cleanup(func() {
		srv.Close()
		os.Remove(path)
	})
}

// makeDir makes dir (and its missing parents) for the test's sockets and
// removes what it made, once empty, when the test ends.
func makeDir(t *testing.T, dir string, mode os.FileMode) error {
	t.Helper()
	var made []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		made = append(made, d)
	}
	for i := len(made) - 1; i >= 0; i-- {
		if err := os.Mkdir(made[i], mode); err != nil {
			return err
		}
		os.Chmod(made[i], mode)
	}
	t.Cleanup(func() {
		for _, d := range made {
			os.Remove(d) // only if empty: an X server may have come meanwhile
		}
	})
	return nil
}

// The attacker is any command an agent's action starts — a shell with or
// without network, sandboxed or not, a program started directly like an
// MCP server over stdio or the script child — connecting to the host's
// pathname sockets: the X server's under /tmp/.X11-unix, the session bus
// under /run/user/<uid>, the system bus under /run/dbus, and any other
// socket the host has bound (an ssh-agent's directory, a service's socket
// among its files, one in the workspace itself). Each is a real listening
// socket the test makes; outside the sandbox curl reaches every one.
func TestCommandsCannotReachTheHostsSockets(t *testing.T) {
	box := newSandbox(t)
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CREW_REQUIRE_NETNS") != "" {
			t.Fatalf("curl is needed (.ci/run installs it): %v", err)
		}
		t.Skipf("no curl here: %v", err)
	}
	pid := os.Getpid()
	base, err := os.MkdirTemp("", "crew-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	ws := filepath.Join(base, "workspace")
	mixed := filepath.Join(base, "service")
	for _, d := range []string{ws, mixed, filepath.Join(base, "ssh-agent")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(mixed, "notes.txt"), []byte("service notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	places := []hostSocket{
		{"X server", fmt.Sprintf("/tmp/.X11-unix/crew-test-%d", pid), true},
		{"session bus", fmt.Sprintf("/run/user/%d/crew-test-%d-bus", os.Getuid(), pid), true},
		{"system bus", fmt.Sprintf("/run/dbus/crew-test-%d-system_bus_socket", pid), true},
		{"ssh-agent", filepath.Join(base, "ssh-agent", "agent.sock"), true},
		{"a service among its files", filepath.Join(mixed, "service.sock"), false},
		{"in the workspace", filepath.Join(ws, "host.sock"), false},
	}
	var made []hostSocket
	for _, p := range places {
		mode := os.FileMode(0o755)
		if strings.HasPrefix(p.path, "/tmp/.X11-unix/") {
			mode = 0o1777
		}
		if err := makeDir(t, filepath.Dir(p.path), mode); err != nil {
			if os.Geteuid() != 0 {
				t.Logf("%s: %v (not root: left out)", p.name, err)
				continue
			}
			t.Fatalf("%s: %v", p.name, err)
		}
		listenHTTP(t, p.path)
		made = append(made, p)
	}

	// Control: outside the sandbox each socket answers.
	for _, p := range made {
		out, err := exec.Command(curl, "-sS", "--noproxy", "*", "--max-time", "5", "--unix-socket", p.path, "http://host/").CombinedOutput()
		if err != nil || string(out) != reachedMark {
			t.Fatalf("control: curl outside the sandbox to the %s at %s: %q, %v", p.name, p.path, out, err)
		}
	}

	var script strings.Builder
	for _, p := range made {
		fmt.Fprintf(&script, "p=%q\n", p.path)
		script.WriteString(`[ -S "$p" ] && echo "socket $p"
[ -e "$p" ] && echo "exists $p"
curl -sS --noproxy '*' --max-time 5 --unix-socket "$p" http://host/ && echo " reached $p"
`)
	}
	script.WriteString(`for d in /tmp/.X11-unix /run/user /run/dbus ` + filepath.Join(base, "ssh-agent") + `; do
  [ -z "$(ls -A "$d" 2>/dev/null)" ] || echo "listed $d: $(ls -A "$d")"
done
cat ` + filepath.Join(mixed, "notes.txt") + `
echo done
`)
	shapes := []struct {
		name string
		cmd  Command
	}{
		{"shell, no sandbox", Command{Script: script.String()}},
		{"shell, sandbox with network", Command{Script: script.String(), Sandbox: &Policy{Network: true, WritePaths: []string{ws}}}},
		{"shell, sandbox without network", Command{Script: script.String(), Sandbox: &Policy{WritePaths: []string{ws}}}},
		{"program (MCP server, script child)", Command{Exec: []string{"/bin/sh", "-c", script.String()}, Lasting: true, Sandbox: &Policy{}}},
	}
	for name, f := range facilities(t) {
		for _, s := range shapes {
			t.Run(name+"/"+s.name, func(t *testing.T) {
				c := s.cmd
				c.Dir, c.Env = ws, Environ(os.Environ())
				out, err := box.run(t.Context(), c, f)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(out.Text, "service notes\ndone\n") {
					t.Fatalf("the command did not run through: %+v", out)
				}
				for _, bad := range []string{reachedMark, "socket ", "listed "} {
					if strings.Contains(out.Text, bad) {
						t.Errorf("a host socket was in reach (%q):\n%s", bad, out.Text)
					}
				}
				for _, p := range made {
					if p.hidden && strings.Contains(out.Text, "exists "+p.path) {
						t.Errorf("the %s's socket %s is in sight:\n%s", p.name, p.path, out.Text)
					}
				}
			})
		}
	}
}

// hostSockets covers whole only what holds nothing a command needs.
func TestHostSocketsKeepWhatTheCommandNeeds(t *testing.T) {
	base := t.TempDir()
	only := filepath.Join(base, "only")
	among := filepath.Join(base, "among")
	for _, d := range []string{only, among} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(among, "data"), nil, 0o644)
	var lines []string
	for _, p := range []string{filepath.Join(only, "a.sock"), filepath.Join(among, "b.sock"), filepath.Join(base, "kept", "c.sock")} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		lines = append(lines, "0000: 00000002 00000000 00010000 0001 01 1 "+p)
	}
	list := filepath.Join(base, "net-unix")
	os.WriteFile(list, []byte("Num RefCount Protocol Flags Type St Inode Path\n"+strings.Join(lines, "\n")+"\n0000: 00000002 00000000 00010000 0001 01 2 @abstract\n"), 0o644)
	dirs, files, err := hostSockets([]string{filepath.Join(base, "kept")}, list)
	if err != nil {
		t.Fatal(err)
	}
	if !contains(dirs, only) || contains(dirs, among) || contains(dirs, filepath.Join(base, "kept")) {
		t.Errorf("dirs %v: want %s covered whole, not %s (other files) nor kept/ (needed)", dirs, only, among)
	}
	for _, f := range []string{filepath.Join(among, "b.sock"), filepath.Join(base, "kept", "c.sock")} {
		if !contains(files, f) {
			t.Errorf("files %v: want %s plugged", files, f)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
