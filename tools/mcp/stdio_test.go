package mcp

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/tools/shell/shelltest"
)

// npmServer is the entry point of a reference MCP server (npm, pinned in
// .ci/npm/package.json).
func npmServer(t *testing.T, pkg string) string {
	t.Helper()
	js, _ := filepath.Abs("../../.ci/npm/node_modules/@modelcontextprotocol/" + pkg + "/dist/index.js")
	if _, err := os.Stat(js); err != nil {
		t.Skipf("%s not installed at %s: run .ci/run once (npm install)", pkg, js)
	}
	return js
}

// pidsWith are the processes whose environment holds kv.
func pidsWith(kv string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && strings.Contains("\x00"+string(b)+"\x00", "\x00"+kv+"\x00") {
			out = append(out, pid)
		}
	}
	return out
}

// A stdio server starts on first use inside the sandbox, answers, and
// after its process is killed the next call starts it again and works;
// the restart is told (OnRestart) with how the process ended.
func TestStdioServerRestartsAfterItIsKilled(t *testing.T) {
	js := npmServer(t, "server-everything")
	home := t.TempDir()
	marker := "CREW_TEST_MARKER=" + strconv.FormatInt(int64(os.Getpid()), 10) + "-" + filepath.Base(home)
	p := NewPool(PoolConfig{Version: "test", Servers: []Server{{Name: "ev", Stdio: &Stdio{
		Command: []string{"node", js, "stdio"}, Env: []string{marker}, Dir: filepath.Join(home, "mcp", "ev"), Home: home,
	}}}, Sandbox: shelltest.New(t)})
	defer p.Close()
	var mu sync.Mutex
	var restarts []Restart
	p.OnRestart(func(r Restart) { mu.Lock(); restarts = append(restarts, r); mu.Unlock() })

	if len(pidsWith(marker)) != 0 {
		t.Fatal("started before first use")
	}
	if got := call(t, p, []string{"ev"}, "mcp__ev__echo", `{"message":"hi"}`); !strings.Contains(got, "Echo: hi") {
		t.Fatalf("echo = %q", got)
	}
	pids := pidsWith(marker)
	if len(pids) == 0 {
		t.Fatal("no process of the server found")
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	eventstest.Eventually(t, "the killed server's process seen ended", func() bool {
		s := p.server("ev")
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(pidsWith(marker)) == 0 && s.procEndedLocked()
	})
	if got := call(t, p, []string{"ev"}, "mcp__ev__echo", `{"message":"again"}`); !strings.Contains(got, "Echo: again") {
		t.Fatalf("echo after kill = %q", got)
	}
	eventstest.Eventually(t, "the restart told", func() bool { mu.Lock(); defer mu.Unlock(); return len(restarts) == 1 })
	if r := restarts[0]; r.Server != "ev" || r.Restarts != 1 || !strings.Contains(r.Reason, "ended by signal: killed") && !strings.Contains(r.Reason, "exit code") {
		t.Fatalf("restart = %+v", r)
	}
	st := p.Status(t.Context())
	if len(st) != 1 || st[0].Transport != "stdio" || st[0].Restarts != 1 || st[0].Err != nil {
		t.Fatalf("status = %+v", st)
	}
}

// A stdio server sees nothing of the crew home but its own folder and
// the paths its entry names: the filesystem server, allowed the whole
// home, lists only the named folder, cannot read the env file, and reads
// a file inside the named folder.
func TestStdioServerSeesOnlyItsFolders(t *testing.T) {
	js := npmServer(t, "server-filesystem")
	home := t.TempDir()
	ws := filepath.Join(home, "workspace")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "note.txt"), []byte("inside the workspace"), 0o644)
	os.WriteFile(filepath.Join(home, "env"), []byte("SECRET_TOKEN=abcdefgh"), 0o600)
	os.MkdirAll(filepath.Join(home, "data"), 0o755)
	p := NewPool(PoolConfig{Version: "test", Servers: []Server{{Name: "fs", ReadOnly: []string{"read_text_file", "list_directory"}, Stdio: &Stdio{
		Command: []string{"node", js, home}, Dir: filepath.Join(home, "mcp", "fs"), Home: home, ReadPaths: []string{ws},
	}}}, Sandbox: shelltest.New(t)})
	defer p.Close()
	if got := call(t, p, []string{"fs"}, "mcp__fs__read_text_file", `{"path":"`+filepath.Join(ws, "note.txt")+`"}`); !strings.Contains(got, "inside the workspace") {
		t.Fatalf("read inside = %q", got)
	}
	got := call(t, p, []string{"fs"}, "mcp__fs__list_directory", `{"path":"`+home+`"}`)
	if !strings.Contains(got, "workspace") || strings.Contains(got, "data") || strings.Contains(got, "env") {
		t.Fatalf("home as the server sees it = %q", got)
	}
	if got := call(t, p, []string{"fs"}, "mcp__fs__read_text_file", `{"path":"`+filepath.Join(home, "env")+`"}`); strings.Contains(got, "abcdefgh") {
		t.Fatalf("the env file was read: %q", got)
	}
}

func call(t *testing.T, p *Pool, servers []string, name, args string) string {
	t.Helper()
	return run(t, p, servers, name, args).Output
}

// PoolConfig.Restarts stores what the pool tells of a restart as an
// mcp_server_restarted event on the server's scope; with no log it
// records nothing.
func TestPoolRestartsAreStored(t *testing.T) {
	_, log := eventstest.Start(t)
	if p := NewPool(PoolConfig{Version: "test"}); p.onRestart != nil {
		t.Fatal("a nil log set a recorder")
	}
	p := NewPool(PoolConfig{Version: "test", Restarts: log})
	defer p.Close()
	p.onRestart(Restart{Server: "ev", Restarts: 2, Reason: "ended by signal: killed"})
	envs, err := log.ReadAll(t.Context(), events.MCP("ev").Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 1 {
		t.Fatalf("%d events stored, want 1", len(envs))
	}
	e, err := envs[0].Decode()
	if r, ok := e.(*events.MCPServerRestarted); err != nil || !ok || *r != (events.MCPServerRestarted{Server: "ev", Restarts: 2, Reason: "ended by signal: killed"}) {
		t.Errorf("stored %#v, %v", e, err)
	}
}
