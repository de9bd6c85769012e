package shell

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The tests here attack the isolation from inside a real command, the way
// a model's shell_run would, in every namespace mode this machine has.

const homeSecret = "sk-home-secret-4f1c9a"

// fakeHome lays out a crew home: the master's files in the home itself,
// another agent under agents/, and everything that must stay out of sight
// holding homeSecret. It returns the home and the other agent's folder.
func fakeHome(t *testing.T) (home, other string) {
	t.Helper()
	home = filepath.Join(t.TempDir(), "home")
	files := map[string]string{
		"env":                         "OPENROUTER_API_KEY=" + homeSecret + "\n",
		"config.yaml":                 "auth_token: " + homeSecret + "\n",
		"data/nats/jetstream/blk.dat": homeSecret,
		"data/projections.db":         homeSecret,
		"browser/master/Cookies":      homeSecret,
		"desktop/token":               homeSecret,
		"spill/conv-1/out.txt":        homeSecret,
		"logs/serve.log":              homeSecret,
		"users/owner/USER.md":         homeSecret,
		"wiki/page.md":                homeSecret,
		"owner-notes.txt":             homeSecret,
		"agents/ledger/MEMORY.md":     homeSecret,
		"agents/ledger/workspace/a":   homeSecret,
		"MEMORY.md":                   "master memory\n",
		"memory/2026-12-01.md":        "master day\n",
		"workspace/readme.txt":        "master workspace\n",
		"skills/delegation.md":        "shared skill\n",
		".agents/hooks.json":          "{}\n",
	}
	for name, content := range files {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// An agent folder that lives elsewhere, linked from the home.
	elsewhere := filepath.Join(t.TempDir(), "researcher")
	if err := os.MkdirAll(filepath.Join(elsewhere, "workspace"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(elsewhere, "MEMORY.md"), []byte(homeSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(home, "agents", "researcher")); err != nil {
		t.Fatal(err)
	}
	return home, filepath.Join(home, "agents", "ledger")
}

// modes returns each namespace mode that works here, unsandboxed.
func modes(t *testing.T) map[string]facility {
	t.Helper()
	box := newSandbox(t)
	out := map[string]facility{}
	for name, m := range map[string]nsMode{"root": nsRoot, "userns": nsUser} {
		f := facility{ns: m}
		if _, err := box.run(t.Context(), Command{Script: "exit 0", Dir: "/"}, f); err == nil {
			out[name] = f
		}
	}
	if len(out) == 0 {
		t.Fatalf("no namespace mode works here: %v", box.probed().nsErr)
	}
	return out
}

// shellIn runs script as a command of the agent in agentDir.
func shellIn(t *testing.T, box *Sandbox, f facility, home, agentDir, script string, sandbox *Policy) Output {
	t.Helper()
	ws := filepath.Join(agentDir, "workspace")
	out, err := box.run(t.Context(), Command{Script: script, Dir: ws, Env: Environ(os.Environ()), View: HomeView(home, agentDir), Sandbox: sandbox}, f)
	if err != nil {
		t.Fatalf("%q: %v", script, err)
	}
	return out
}

func TestShellCannotReadEnvFile(t *testing.T) {
	box := newSandbox(t)
	home, _ := fakeHome(t)
	attacks := []string{
		"cat ../env",
		"cat " + home + "/env",
		"cat " + home + "/config.yaml",
		"cat $(realpath ..)/env",
		"find " + home + " -type f -exec cat {} +",
		// Undo the view: the cover and /proc are locked mounts.
		"umount " + home + "; cat " + home + "/env",
		"umount -l " + home + "; cat " + home + "/env",
		"umount -l /proc; cat /proc/*/environ; cat " + home + "/env",
		"mount -t proc proc /mnt 2>&1; cat /mnt/*/environ",
		// Raw disks: /dev holds only a few harmless devices.
		"ls /dev; for d in /dev/sd* /dev/vd* /dev/nvme* /dev/xvd* /dev/mem; do head -c 1 $d; done",
		"grep -r -l -s " + homeSecret + " " + filepath.Dir(home),
	}
	for name, f := range modes(t) {
		t.Run(name, func(t *testing.T) {
			for _, sb := range []*Policy{nil, {Network: true, WritePaths: []string{filepath.Join(home, "workspace")}}} {
				for _, a := range attacks {
					out := shellIn(t, box, f, home, home, a, sb)
					if strings.Contains(out.Text, homeSecret) {
						t.Errorf("sandbox %v: %q printed the secret:\n%s", sb != nil, a, out.Text)
					}
				}
			}
			// What the master must see is there.
			out := shellIn(t, box, f, home, home, "cat readme.txt ../MEMORY.md ../memory/2026-12-01.md ../skills/delegation.md && echo new > made.txt && cat made.txt", nil)
			if out.ExitCode != 0 || out.Text != "master workspace\nmaster memory\nmaster day\nshared skill\nnew\n" {
				t.Errorf("the master's own files: %+v", out)
			}
			if b, err := os.ReadFile(filepath.Join(home, "workspace", "made.txt")); err != nil || string(b) != "new\n" {
				t.Errorf("a write in the workspace did not land: %q, %v", b, err)
			}
			// Its memory and the shared kits are read-only to the shell.
			out = shellIn(t, box, f, home, home, "echo x >> ../MEMORY.md || echo x > ../skills/new.md || echo refused", nil)
			if !strings.Contains(out.Text, "refused") {
				t.Errorf("the shell wrote to memory or skills: %+v", out)
			}
		})
	}
}

func TestShellCannotSeeDataOrOtherAgents(t *testing.T) {
	box := newSandbox(t)
	home, ledger := fakeHome(t)
	researcher, _ := filepath.EvalSymlinks(filepath.Join(home, "agents", "researcher"))
	for name, f := range modes(t) {
		t.Run(name, func(t *testing.T) {
			// From the master: data/, browser/, desktop/, other agents'
			// folders (also one linked from elsewhere) are empty or absent.
			for _, p := range []string{"data", "browser", "desktop", "spill", "logs", "users", "wiki", "agents", "agents/ledger", "agents/researcher", "owner-notes.txt"} {
				out := shellIn(t, box, f, home, home, "ls -A "+filepath.Join(home, p)+" 2>&1; cat "+filepath.Join(home, p)+" 2>&1", nil)
				if strings.Contains(out.Text, homeSecret) || strings.Contains(out.Text, "blk.dat") || strings.Contains(out.Text, "MEMORY.md") || strings.Contains(out.Text, "Cookies") {
					t.Errorf("master sees %s:\n%s", p, out.Text)
				}
			}
			out := shellIn(t, box, f, home, home, "ls -A "+researcher+" | wc -l; cat "+researcher+"/MEMORY.md", nil)
			if strings.Contains(out.Text, homeSecret) || !strings.HasPrefix(out.Text, "0\n") {
				t.Errorf("master sees the linked agent folder %s:\n%s", researcher, out.Text)
			}
			// From another agent: its own folder, not the master's.
			os.WriteFile(filepath.Join(ledger, "workspace", "mine.txt"), []byte("ledger file\n"), 0o600)
			out = shellIn(t, box, f, home, ledger, "cat mine.txt; ls -A "+home+"; cat "+home+"/MEMORY.md "+home+"/workspace/readme.txt "+home+"/env", nil)
			if !strings.Contains(out.Text, "ledger file") {
				t.Errorf("ledger cannot read its own workspace:\n%s", out.Text)
			}
			for _, hidden := range []string{"master memory", "master workspace", homeSecret[:0] + "OPENROUTER", "env\n", "data\n", "workspace\n"} {
				if strings.Contains(out.Text, hidden) {
					t.Errorf("ledger sees %q of the master:\n%s", hidden, out.Text)
				}
			}
			// The home's listing holds only the shared kits and the agent.
			got := strings.Fields(shellIn(t, box, f, home, ledger, "ls -A "+home+" "+home+"/agents", nil).Text)
			want := []string{home + ":", ".agents", "agents", "skills", home + "/agents:", "ledger"}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("ledger's view of the home: %v, want %v", got, want)
			}
		})
	}
}

func TestShellCannotReadServerEnviron(t *testing.T) {
	box := newSandbox(t)
	const secret = "server-env-secret-77ab"
	t.Setenv("CREW_TEST_SERVER_TOKEN", secret)
	home, _ := fakeHome(t)
	self := strconv.Itoa(os.Getpid())
	script := `cat /proc/$PPID/environ; cat /proc/*/environ; cat /proc/` + self + `/environ; ` +
		`for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline; echo; done; ` +
		`ls /proc/` + self + ` 2>&1; echo "init: $(tr '\0' ' ' < /proc/1/cmdline)"`
	for name, f := range modes(t) {
		t.Run(name, func(t *testing.T) {
			for _, sb := range []*Policy{nil, {}} {
				out := shellIn(t, box, f, home, home, script, sb)
				if strings.Contains(out.Text, secret) {
					t.Errorf("sandbox %v: the server's environment leaked:\n%s", sb != nil, out.Text)
				}
				if !strings.Contains(out.Text, "init: "+stage1Name+" ") {
					t.Errorf("sandbox %v: /proc/1 is not the command's own init:\n%s", sb != nil, out.Text)
				}
				if strings.Contains(out.Text, os.Args[0]+" -test") {
					t.Errorf("sandbox %v: the test process is visible:\n%s", sb != nil, out.Text)
				}
			}
		})
	}
}

func TestSandboxBlocksUnixSockets(t *testing.T) {
	box := newSandbox(t)
	dir := t.TempDir() // readable and writable by the command
	path := filepath.Join(dir, "outside.sock")
	abstract := fmt.Sprintf("@crew-test-%d", os.Getpid())
	var listeners []net.Listener
	for _, addr := range []string{path, abstract} {
		l, err := net.Listen("unix", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		listeners = append(listeners, l)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	connect := func(f facility, addr string, pol *Policy) Output {
		env := append(Environ(os.Environ()), "CREW_SHELL_HELPER=unix", "GORACE=atexit_sleep_ms=0", "CREW_SHELL_ADDR="+addr)
		out, err := box.run(t.Context(), Command{Script: strconv.Quote(self), Dir: dir, Env: env, Sandbox: pol}, f)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for name, f := range facilities(t) {
		t.Run(name, func(t *testing.T) {
			// With network, the host's pathname sockets are out of the
			// command's view (TestCommandsCannotReachTheHostsSockets);
			// abstract sockets belong to a network namespace, and every
			// command has its own.
			for _, pol := range []*Policy{nil, {Network: true, WritePaths: []string{dir}}} {
				for _, addr := range []string{path, abstract} {
					if out := connect(f, addr, pol); out.ExitCode == 0 {
						t.Errorf("%s with network (sandbox %v): %+v, want refused", addr, pol != nil, out)
					}
				}
			}
			// Without network no Unix socket can even be made: the
			// seccomp filter refuses socket(2) before any connect.
			for _, addr := range []string{path, abstract} {
				out := connect(f, addr, &Policy{WritePaths: []string{dir}})
				if out.ExitCode == 0 || !strings.Contains(out.Text, "socket: operation not permitted") {
					t.Errorf("%s without network: %+v, want socket(2) refused", addr, out)
				}
			}
			// A shell tool without network: nc/socat/python would need an
			// AF_UNIX socket too; /bin/sh has none, so check the pairs.
			env := append(Environ(os.Environ()), "CREW_SHELL_HELPER=socketpair", "GORACE=atexit_sleep_ms=0")
			out, err := box.run(t.Context(), Command{Script: strconv.Quote(self), Dir: dir, Env: env, Sandbox: &Policy{}}, f)
			if err != nil || out.Text != "stream <nil>, dgram operation not permitted\n" {
				t.Errorf("socket pairs without network: %+v, %v; want stream allowed, datagram refused", out, err)
			}
		})
	}
	_ = listeners
}

// A command has a session of its own, led by its init, so it has no
// controlling terminal: /dev/tty cannot reach the owner's terminal (no
// TIOCSTI injection into the shell that started the server).
func TestShellHasNoControllingTerminal(t *testing.T) {
	box := newSandbox(t)
	for name, f := range modes(t) {
		t.Run(name, func(t *testing.T) {
			out, err := box.run(t.Context(), Command{Script: `s=$(cat /proc/self/stat); s=${s##*) }; set -- $s; echo "session $4 tty $5"`, Dir: "/"}, f)
			if err != nil || out.Text != "session 1 tty 0\n" {
				t.Errorf("got %+v, %v; want the session of the command's own init and no terminal", out, err)
			}
		})
	}
}

// A teammate runs its agent's shell in its claimed task's folder, which
// may be another agent's workspace (R-TEAM): Grant shows that folder
// writable and nothing else of that agent.
func TestGrantedFolderWritableRestHidden(t *testing.T) {
	box := newSandbox(t)
	home, ledger := fakeHome(t)
	task := filepath.Join(home, "workspace", ".worktrees", "wt1")
	if err := os.MkdirAll(task, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, f := range modes(t) {
		t.Run(name, func(t *testing.T) {
			v := HomeView(home, ledger)
			v.Grant(task)
			v.Grant("/etc") // outside the home: not granted
			out, err := box.run(t.Context(), Command{Script: "echo ok > done.txt && cat done.txt; cat " + home + "/AGENTS.md " + home + "/env 2>&1; touch /etc/x 2>&1",
				Dir: task, Env: Environ(os.Environ()), View: v}, f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out.Text, "ok\n") || strings.Contains(out.Text, homeSecret) {
				t.Fatalf("in the granted folder: %q", out.Text)
			}
			if data, _ := os.ReadFile(filepath.Join(task, "done.txt")); string(data) != "ok\n" {
				t.Fatalf("the write did not land: %q", data)
			}
			if slices.Contains(v.Write, "/etc") {
				t.Fatal("a folder outside the home was granted")
			}
		})
	}
}
