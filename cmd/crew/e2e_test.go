package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/nats-io/nats.go"
)

// crewBin is the crew binary built once for the end-to-end tests.
var crewBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "crew-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	crewBin = filepath.Join(dir, "crew")
	// crewtest compiles in the fault-injection points (cmd/crew/faults).
	build := exec.Command("go", "build", "-tags", "crewtest", "-o", crewBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build crew:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// crew runs a crew command to completion.
func crew(t *testing.T, home string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	// A bound, so a command that should have exited but serves instead
	// fails its test rather than the whole package's timeout.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, crewBin, args...)
	cmd.Env = append(os.Environ(), "CREW_HOME="+home)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil && t.Context().Err() == nil {
		t.Fatalf("crew %v did not exit within 3 minutes; stderr:\n%s", args, errb.String())
	}
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run crew %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// server is a running `crew serve` child process.
type server struct {
	cmd    *exec.Cmd
	url    string
	stdout *lockedBuffer
	stderr *lockedBuffer
	done   chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var servingLine = regexp.MustCompile(`crew is serving on (http://\S+)`)

// startServe starts `crew serve` on a free port, with extra environment
// (KEY=VALUE), and waits for /healthz 200.
func startServe(t *testing.T, home string, env ...string) *server {
	t.Helper()
	s := launchServe(t, home, env...)
	waitHealthy(t, s.url)
	return s
}

// launchServe starts `crew serve` and waits for it to print its URL.
func launchServe(t *testing.T, home string, env ...string) *server {
	t.Helper()
	return launchServeWithin(t, home, 60*time.Second, env...)
}

// launchServeWithin is launchServe waiting at most within for the URL;
// a child that exits before it fails t at once, with its stderr.
func launchServeWithin(t testing.TB, home string, within time.Duration, env ...string) *server {
	t.Helper()
	cmd := exec.Command(crewBin, "serve", "--listen", "127.0.0.1:0")
	cmd.Env = append(append(os.Environ(), "CREW_HOME="+home), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.stdout.Write([]byte(sc.Text() + "\n"))
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			t.Logf("crew serve's log:\n%s", s.stderr)
		}
	})
	select {
	case s.url = <-urls:
	case err := <-s.done:
		t.Fatalf("crew serve exited before serving: %v\n%s", err, s.stderr)
	case <-time.After(within):
		t.Fatalf("crew serve printed no URL in %s\n%s", within, s.stderr)
	}
	return s
}

// failIfExited fails t at once, with the child's stderr, if crew serve
// has exited (a benchmark's waits would otherwise run to their end).
func (s *server) failIfExited(t testing.TB) {
	t.Helper()
	select {
	case err := <-s.done:
		s.done <- err // keep it for whoever waits next
		t.Fatalf("crew serve exited: %v\n%s", err, s.stderr)
	default:
	}
}

func waitHealthy(t *testing.T, url string) {
	t.Helper()
	eventstest.EventuallyWithin(t, 60*time.Second, url+"/healthz to answer 200", func() bool {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

func (s *server) stop(t testing.TB) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("crew serve exited with %v after SIGTERM\n%s", err, s.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("crew serve did not stop within 30s of SIGTERM")
	}
}

func (s *server) kill9(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v\n%s", url, err, body)
		}
	}
	return resp.StatusCode
}

func TestInitThenServeAnswersHealthz(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	out, _, code := crew(t, home, "init")
	if code != 0 || !strings.Contains(out, "created home at "+home) {
		t.Fatalf("init: code %d, %q", code, out)
	}
	out, _, code = crew(t, home, "init")
	if code != 0 || !strings.Contains(out, "nothing changed") {
		t.Fatalf("second init: code %d, %q", code, out)
	}
	s := startServe(t, home)
	// R-LLM-4: no key and no Ollama: serve runs on fake:echo and says so.
	eventstest.Eventually(t, "serve to say it runs on fake:echo", func() bool {
		return strings.Contains(s.stdout.String(), "every agent runs on fake:echo")
	})
	if page := getPage(t, s.url+"/"); !strings.Contains(page, "Running on fake:echo: no OPENROUTER_API_KEY") {
		t.Errorf("the home page shows no fake:echo banner:\n%s", page)
	}
	var list []map[string]any
	if status := getJSON(t, s.url+"/api/conversations", &list); status != 200 {
		t.Errorf("GET /api/conversations = %d", status)
	}
	var apiErr map[string]map[string]string
	if status := getJSON(t, s.url+"/api/conversations/no.such", &apiErr); status != 400 || apiErr["error"]["code"] != "invalid_id" {
		t.Errorf("bad id: %d %v", status, apiErr)
	}
	if status := getJSON(t, s.url+"/api/conversations/nosuch", &apiErr); status != 404 || apiErr["error"]["code"] != "not_found" {
		t.Errorf("unknown id: %d %v", status, apiErr)
	}
	// A second server on the same home is refused, not run beside it.
	_, errOut, code := crew(t, home, "serve", "--listen", "127.0.0.1:0")
	if code != 1 || !strings.Contains(errOut, "in use by a running crew serve") {
		t.Errorf("second serve: code %d, %q", code, errOut)
	}
	s.stop(t)
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// enableNATSListen exposes the embedded server so the test can append as a
// real client would.
func enableNATSListen(t *testing.T, home string) string {
	t.Helper()
	addr := freePort(t)
	path := filepath.Join(home, "config.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := regexp.MustCompile(`(?m)^nats:.*\n(\s+.*\n)*`).ReplaceAllString(string(b), "")
	cfg += fmt.Sprintf("nats:\n  sync: always\n  listen: %s\n", addr)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return "nats://" + addr
}

func connectLog(t *testing.T, url string) (*events.Log, *nats.Conn) {
	t.Helper()
	nc, err := nats.Connect(url, nats.Timeout(10*time.Second))
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	log, err := events.Open(t.Context(), nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	return log, nc
}

// R-REL-2: kill -9 of serve, then restart: every acknowledged event is
// still there and the projections catch up.
func TestKill9OfServeLosesNoAppendedEvent(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	if _, _, code := crew(t, home, "init"); code != 0 {
		t.Fatal("init failed")
	}
	natsURL := enableNATSListen(t, home)
	s := startServe(t, home)

	// Messages go through the one door; each 202 means stored.
	ctx := t.Context()
	var ids []string
	var conv string
	const messages = 15
	for i := range messages {
		code, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": fmt.Sprint("message ", i)})
		if code != 202 {
			t.Fatalf("inbound %d: %d %v", i, code, acc)
		}
		conv = acc["conversation_id"].(string)
		ids = append(ids, acc["message_id"].(string))
	}
	s.kill9(t)

	s = startServe(t, home)
	log, _ := connectLog(t, natsURL)
	after, err := log.ReadAll(ctx, events.Conv(conv).Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, env := range after {
		if env.Type == events.TypeMessageReceived {
			got = append(got, env.ID)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Fatalf("after kill -9: messages %v, want %v", got, ids)
	}
	last := after[len(after)-1].Seq
	// The conversations projection catches up, and every message is
	// answered (fake:echo) once the resumed turns are done.
	c := waitConv(t, s.url, conv, "idle with every message answered", settled)
	var users int
	for _, m := range c.History {
		if m.Role == "user" {
			users++
		}
	}
	if users != messages {
		t.Errorf("history has %d user messages, want %d", users, messages)
	}
	all, err := log.ReadAll(ctx, events.Conv(conv).Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	last = all[len(all)-1].Seq

	// Export from the running server, then from the stopped home: the same
	// bytes, and both verify.
	dir := t.TempDir()
	running, stopped := filepath.Join(dir, "running.jsonl"), filepath.Join(dir, "stopped.jsonl")
	if _, errOut, code := crew(t, home, "export", conv, "-o", running); code != 0 {
		t.Fatalf("export while running: %s", errOut)
	}
	s.stop(t)
	if _, errOut, code := crew(t, home, "export", conv, "-o", stopped); code != 0 {
		t.Fatalf("export while stopped: %s", errOut)
	}
	a, _ := os.ReadFile(running)
	b, _ := os.ReadFile(stopped)
	if !bytes.Equal(a, b) {
		t.Errorf("exports differ between running server and stopped home")
	}
	// Rebuild on the stopped home, then doctor reports no lag.
	out, errOut, code := crew(t, home, "projections", "rebuild")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("rebuilt conversations up to sequence %d", last)) || !strings.Contains(out, "rebuilt runs") {
		t.Fatalf("rebuild: code %d, %q %q", code, out, errOut)
	}
	out, _, code = crew(t, home, "doctor")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("projection conversations: at %d, lag 0", last)) {
		t.Errorf("doctor after rebuild: code %d\n%s", code, out)
	}
	out, errOut, code = crew(t, home, "verify", stopped)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("ok: %d events", len(all))) {
		t.Fatalf("verify: code %d, %q %q", code, out, errOut)
	}
	// One byte of the line holding "message 5" altered: verify fails and
	// names that line.
	lines := bytes.SplitAfter(b, []byte("\n"))
	n := 0
	for i, l := range lines {
		if bytes.Contains(l, []byte(`"text":"message 5"`)) {
			n = i
			break
		}
	}
	lines[n] = bytes.Replace(lines[n], []byte("message 5"), []byte("message X"), 1)
	altered := filepath.Join(dir, "altered.jsonl")
	os.WriteFile(altered, bytes.Join(lines, nil), 0o600)
	_, errOut, code = crew(t, home, "verify", altered)
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf("line %d:", n+1)) {
		t.Errorf("verify altered: code %d, %q", code, errOut)
	}
}
