package app

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/tools/script"
)

// openHomeStore makes a home in dir (nats.url when url is set) and opens
// its store as serve does; logged is what it logged.
func openHomeStore(t *testing.T, dir, url string) (s *App, logged string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "config.yaml")); os.IsNotExist(err) {
		if _, err := home.Init(dir); err != nil {
			t.Fatal(err)
		}
	}
	h, err := home.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	h.Config.NATS.URL = url
	var out bytes.Buffer
	s = &App{Dir: dir, Home: h, log: slog.New(slog.NewTextHandler(&out, nil))}
	if err := s.openStore(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s, out.String()
}

// Issue 30 item 4: two crew processes on a real 3-node cluster (two
// homes, one nats.url) share the home's state that is not an event:
// what one's script stored the other's reads, and a web login made on
// one is known on the other until it logs out there.
func TestClusterProcessesShareScriptStoresAndWebLogins(t *testing.T) {
	c := eventstest.StartCluster(t, 3)
	a, _ := openHomeStore(t, filepath.Join(t.TempDir(), "a"), c.URL())
	defer a.Close()
	b, _ := openHomeStore(t, filepath.Join(t.TempDir(), "b"), c.URL())
	defer b.Close()
	ctx := t.Context()

	if err := a.scripts.Save(ctx, "master", "job-daily", map[string]json.RawMessage{"runs": json.RawMessage("3")}); err != nil {
		t.Fatal(err)
	}
	if m, err := b.scripts.Load(ctx, "master", "job-daily"); err != nil || string(m["runs"]) != "3" {
		t.Errorf("b reads a's script store as %v (%v), want runs: 3", m, err)
	}
	if err := b.scripts.Save(ctx, "master", "job-daily", map[string]json.RawMessage{"runs": json.RawMessage("4")}); err != nil {
		t.Fatal(err)
	}
	if m, err := a.scripts.Load(ctx, "master", "job-daily"); err != nil || string(m["runs"]) != "4" {
		t.Errorf("a reads b's write as %v (%v), want runs: 4", m, err)
	}

	id, err := a.sessions.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !b.sessions.Valid(ctx, id) {
		t.Error("a login made on a is not known on b")
	}
	if err := b.sessions.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if a.sessions.Valid(ctx, id) {
		t.Error("a logout on b did not end the session on a")
	}
}

// Issue 30 item 4: a single-node home of an older build kept its scripts'
// stores and its web logins in files under data/; the first open moves
// them into the embedded server's buckets (the files go) and says so,
// the second moves nothing and still has them.
func TestOldHomesStateFilesMoveIntoTheBucketsOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "old")
	if _, err := home.Init(dir); err != nil {
		t.Fatal(err)
	}
	stores := script.FilesDir(dir)
	if err := os.MkdirAll(filepath.Join(stores, "master"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(stores, "master", "job-daily.json"), []byte(`{"runs":7}`), 0o600)
	os.WriteFile(filepath.Join(stores, "master", "c1.json"), []byte(`{"seen":["a"]}`), 0o600)
	// A session as the older build wrote it: the SHA-256 of the cookie's id.
	sessionsFile := filepath.Join(dir, "data", "web-sessions.json")
	id := "cookie-of-an-older-build-0123456789abcdefghijklmn"
	now := time.Now().UTC().Format(time.RFC3339)
	os.WriteFile(sessionsFile, []byte(`{"sessions":{"`+hashHex(id)+`":{"created":"`+now+`","seen":"`+now+`"}}}`), 0o600)

	s, logged := openHomeStore(t, dir, "")
	if !strings.Contains(logged, "moved the scripts' stores from files") || !strings.Contains(logged, "stores=2") ||
		!strings.Contains(logged, "moved the web logins from a file") || !strings.Contains(logged, "sessions=1") {
		t.Errorf("the first open does not say it moved 2 stores and 1 login:\n%s", logged)
	}
	for _, p := range []string{stores, sessionsFile} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the move (%v)", p, err)
		}
	}
	s.Close()

	s, logged = openHomeStore(t, dir, "")
	defer s.Close()
	if strings.Contains(logged, "moved") {
		t.Errorf("the second open moved again:\n%s", logged)
	}
	if m, err := s.scripts.Load(t.Context(), "master", "job-daily"); err != nil || string(m["runs"]) != "7" {
		t.Errorf("the job's store after the move = %v (%v), want runs: 7", m, err)
	}
	if m, err := s.scripts.Load(t.Context(), "master", "c1"); err != nil || string(m["seen"]) != `["a"]` {
		t.Errorf("the conversation's store after the move = %v (%v)", m, err)
	}
	if !s.sessions.Valid(t.Context(), id) {
		t.Error("the older build's login is not valid after the move")
	}
}

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
