package home

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/my-agent-crew/crew/schemas"
)

func TestInitCreatesWorkingHome(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home")
	created, err := Init(dir)
	if err != nil || !created {
		t.Fatalf("Init = %v, %v; want true, nil", created, err)
	}
	for _, d := range []string{"memory", "workspace", "agents", "users/owner/facts", "skills", ".agents/commands", "logs", "data"} {
		if fi, err := os.Stat(filepath.Join(dir, d)); err != nil || !fi.IsDir() {
			t.Errorf("dir %s: %v", d, err)
		}
	}
	// Spills are kept in the log's object store: no spill/ folder.
	if _, err := os.Lstat(filepath.Join(dir, "spill")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("init made spill/ (%v), want none", err)
	}
	for _, f := range []string{"config.yaml", "agent.yaml", "AGENTS.md", "SOUL.md", "MEMORY.md", "users/owner/USER.md", "env"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("file %s: %v", f, err)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("env mode = %04o, want 0600", got)
	}
	env, _ := os.ReadFile(filepath.Join(dir, "env"))
	for _, want := range []string{"# OPENROUTER_API_KEY=", "# OLLAMA_HOST=", "# TELEGRAM_BOT_TOKEN="} {
		if !strings.Contains(string(env), want) {
			t.Errorf("env lacks %q", want)
		}
	}
	cfg, _ := os.ReadFile(filepath.Join(dir, "config.yaml"))
	if !strings.Contains(string(cfg), "# listen: 127.0.0.1:4222") {
		t.Errorf("config.yaml lacks the commented nats listen line")
	}

	h := mustLoad(t, dir)
	if len(h.Problems) != 0 {
		t.Fatalf("Problems = %v", h.Problems)
	}
	m := h.Agents[MasterID]
	if m == nil {
		t.Fatalf("no master agent; agents = %v", h.Agents)
	}
	if m.Name != "Assistant" || !slices.Equal(m.Routes, []string{"fake:echo"}) || m.Autonomous || m.MaxSteps != 12 || m.Dir != h.Dir {
		t.Errorf("master = %+v", m)
	}
	if h.Config.ApprovalTTLSeconds != 600 || h.Config.NATS.Sync != "always" || h.Config.Location() == nil {
		t.Errorf("config = %+v", h.Config)
	}
	// Every line commented but the audit key crew init generates (item 9).
	if len(h.Env) != 1 || len(h.Env[AuditKeyVar]) != 43 {
		t.Errorf("Env = %v, want only a generated %s", h.Env, AuditKeyVar)
	}
	// config.yaml may hold auth_token: 0600 like env (item 2).
	if fi, err := os.Stat(filepath.Join(dir, "config.yaml")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config.yaml: %v %v, want mode 0600", fi, err)
	}
}

// EnsureEnvSecret adds a missing secret, keeps every other line, writes
// 0600, and never replaces a value already there.
func TestEnsureEnvSecretKeepsLines(t *testing.T) {
	dir := t.TempDir()
	env := filepath.Join(dir, "env")
	os.WriteFile(env, []byte("# mine\nOPENROUTER_API_KEY=sk-1\nCREW_AUTH_TOKEN=\nexport X='y'"), 0o600)
	v, created, err := EnsureEnvSecret(dir, AuthTokenVar, "generated", NewSecret)
	if err != nil || !created || len(v) != 43 {
		t.Fatalf("EnsureEnvSecret = %q %v %v", v, created, err)
	}
	b, _ := os.ReadFile(env)
	if !strings.HasPrefix(string(b), "# mine\nOPENROUTER_API_KEY=sk-1\nCREW_AUTH_TOKEN=\nexport X='y'\n# generated\nCREW_AUTH_TOKEN="+v+"\n") {
		t.Errorf("env = %q", b)
	}
	if fi, _ := os.Stat(env); fi.Mode().Perm() != 0o600 {
		t.Errorf("env mode %04o", fi.Mode().Perm())
	}
	again, created, err := EnsureEnvSecret(dir, AuthTokenVar, "generated", NewSecret)
	if err != nil || created || again != v {
		t.Errorf("second EnsureEnvSecret = %q %v %v, want the first value kept", again, created, err)
	}
	m, _ := ReadEnvFile(env)
	if m["OPENROUTER_API_KEY"] != "sk-1" || m["X"] != "y" || m[AuthTokenVar] != v {
		t.Errorf("env after = %v", m)
	}
	os.Chmod(env, 0o644)
	if _, _, err := EnsureEnvSecret(dir, AuditKeyVar, "generated", NewSecret); err == nil {
		t.Error("an env file others can read was written to")
	}
}

// The generated files are the examples users copy from: they must satisfy
// the published schemas on their own, not only through Load.
func TestInitFilesValidateAgainstSchemas(t *testing.T) {
	dir := newHome(t)
	for file, schema := range map[string]string{"config.yaml": "config.schema.json", "agent.yaml": "agent.schema.json"} {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if err := schemas.Validate(schema, jsonValue(v)); err != nil {
			t.Errorf("%s: %v", file, err)
		}
	}
}

func TestInitTwiceChangesNothing(t *testing.T) {
	dir := newHome(t)
	before := snapshot(t, dir)
	created, err := Init(dir)
	if err != nil || created {
		t.Fatalf("second Init = %v, %v; want false, nil", created, err)
	}
	after := snapshot(t, dir)
	if len(after) != len(before) {
		t.Fatalf("entries: %d before, %d after", len(before), len(after))
	}
	for p, b := range before {
		if after[p] != b {
			t.Errorf("%s changed: %q -> %q", p, b, after[p])
		}
	}
}

// An interrupted Init (no config.yaml yet) is finished by the next one
// without overwriting what the owner already wrote.
func TestInitKeepsExistingFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "SOUL.md"), "mine\n")
	created, err := Init(dir)
	if err != nil || !created {
		t.Fatalf("Init = %v, %v; want true, nil", created, err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "SOUL.md"))
	if string(got) != "mine\n" {
		t.Errorf("SOUL.md = %q, want it kept", got)
	}
}

// snapshot maps every path under dir to its mode, mtime and content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		s := fi.Mode().String() + " " + fi.ModTime().Format(time.RFC3339Nano)
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s += " " + string(b)
		}
		out[p] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDetectZone(t *testing.T) {
	notExist := func(string) ([]byte, error) { return nil, fs.ErrNotExist }
	noLink := func(string) (string, error) { return "", fs.ErrNotExist }
	file := func(s string) func(string) ([]byte, error) {
		return func(string) ([]byte, error) { return []byte(s), nil }
	}
	link := func(s string) func(string) (string, error) {
		return func(string) (string, error) { return s, nil }
	}
	tests := []struct {
		name     string
		readFile func(string) ([]byte, error)
		readlink func(string) (string, error)
		want     string
	}{
		{"etc timezone", file("Europe/Berlin\n"), noLink, "Europe/Berlin"},
		{"linux symlink", notExist, link("/usr/share/zoneinfo/Asia/Ho_Chi_Minh"), "Asia/Ho_Chi_Minh"},
		{"macos symlink", notExist, link("/var/db/timezone/zoneinfo/America/New_York"), "America/New_York"},
		{"bad file falls back to link", file("garbage"), link("../usr/share/zoneinfo/Europe/Paris"), "Europe/Paris"},
		{"nothing", notExist, noLink, "UTC"},
		{"odd link", notExist, link("/etc/mytime"), "UTC"},
	}
	for _, tt := range tests {
		if got := detectZone(tt.readFile, tt.readlink); got != tt.want {
			t.Errorf("%s: detectZone = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestDir(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		wantErr bool
	}{
		{"CREW_HOME wins", map[string]string{"CREW_HOME": "/srv/crew", "HOME": "/home/a"}, "/srv/crew", false},
		{"tilde", map[string]string{"CREW_HOME": "~/crew", "HOME": "/home/a"}, "/home/a/crew", false},
		{"default", map[string]string{"HOME": "/home/a"}, "/home/a/.my-agent-crew", false},
		{"nothing set", map[string]string{}, "", true},
	}
	for _, tt := range tests {
		got, err := Dir(func(k string) string { return tt.env[k] })
		if (err != nil) != tt.wantErr || got != filepath.FromSlash(tt.want) {
			t.Errorf("%s: Dir = %q, %v; want %q (error %v)", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestWriteFileAtomicLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := WriteFileAtomic(p, []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("entries = %v, want only f", entries)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v", fi.Mode())
	}
	if err := WriteFileAtomic(filepath.Join(dir, "missing", "f"), nil, 0o600); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("write into missing dir: %v, want ErrNotExist", err)
	}
}

// R-HOME-5: crew init installs the seed's personal agents as examples, with
// their schedules disabled and the ledger's shell without network.
func TestInitInstallsExampleAgents(t *testing.T) {
	dir := t.TempDir()
	if _, err := Init(dir); err != nil {
		t.Fatal(err)
	}
	h := mustLoad(t, dir)
	if len(h.Problems) != 0 {
		t.Fatalf("problems: %v", h.Problems)
	}
	for _, id := range append([]string{MasterID}, Examples...) {
		a := h.Agents[id]
		if a == nil {
			t.Fatalf("agent %s not installed", id)
		}
		for _, sc := range a.Schedules {
			if sc.On() {
				t.Errorf("%s: schedule %s enabled; examples ship disabled", id, sc.Name)
			}
		}
	}
	ledger := h.Agents["ledger"]
	if ledger.Policy.ShellNetwork == nil || *ledger.Policy.ShellNetwork {
		t.Error("ledger: shell_network is not false")
	}
	for _, banned := range []string{"delegate", "user_memory_save", "wiki_apply", "wiki_get", "fetch_url", "web_search"} {
		if slices.Contains(ledger.Tools, banned) {
			t.Errorf("ledger has %s", banned)
		}
	}
	for _, f := range []string{".agents/commands/tongket.md", "skills/delegation.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}
