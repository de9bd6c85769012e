package shell

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTwoSandboxesKeepTheirOwnPolicy: two Sandboxes in one process (two
// homes in one test binary) share nothing. Each one's commands with
// network are refused by its own shell_hosts (asked for a host neither
// lists, each names only its own; nothing is ever dialled), each reports
// its own Network, a third built later leaves both as they were, and a
// command one starts is recorded in its own Track directory only.
func TestTwoSandboxesKeepTheirOwnPolicy(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("no curl: %v", err)
	}
	a, err := New(Network{Ports: []int{8080}, Hosts: []string{"a.invalid"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Network{Ports: []int{8443}, Hosts: []string{"b.invalid"}})
	if err != nil {
		t.Fatal(err)
	}
	refused := func(s *Sandbox) []string {
		t.Helper()
		out, err := s.Run(t.Context(), Command{Script: "curl -sS -m 10 http://c.invalid:8080/", Dir: "/", Env: Environ(os.Environ())})
		if err != nil {
			t.Fatal(err)
		}
		return out.Refused
	}
	check := func(when string) {
		t.Helper()
		for _, c := range []struct {
			name      string
			s         *Sandbox
			own, peer string
			port      int
		}{{"a", a, "a.invalid", "b.invalid", 8080}, {"b", b, "b.invalid", "a.invalid", 8443}} {
			if n := c.s.Network(); !slices.Equal(n.Hosts, []string{c.own}) || !slices.Equal(n.Ports, []int{c.port}) {
				t.Errorf("%s: sandbox %s's Network() = %+v, want its own hosts %s on port %d", when, c.name, n, c.own, c.port)
			}
			got := refused(c.s)
			if len(got) != 1 || !strings.Contains(got[0], "only "+c.own+" are reached") || strings.Contains(got[0], c.peer) {
				t.Errorf("%s: sandbox %s's proxy refused %q, want c.invalid refused by its own shell_hosts (%s) only", when, c.name, got, c.own)
			}
		}
	}
	check("as built")

	// A third home opened later, with settings of its own, changes
	// neither; nor does a bad setting New refuses.
	if _, err := New(Network{Ports: []int{9000}, Hosts: []string{"d.invalid"}}); err != nil {
		t.Fatal(err)
	}
	check("after a third was built")
	if _, err := New(Network{Ports: []int{0}}); err == nil || !strings.Contains(err.Error(), "shell_ports") {
		t.Errorf("New with port 0: %v, want a shell_ports error", err)
	}
	check("after a bad Network was refused")

	// Each records its own commands, in its own directory.
	recA, recB := t.TempDir(), t.TempDir()
	if _, err := a.Track(recA); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Track(recB); err != nil {
		t.Fatal(err)
	}
	// One command of each runs until the test opens the gate (bounded: it
	// gives up after about 30 s if the test never does).
	dir := t.TempDir()
	done := make(chan error, 2)
	for _, s := range []*Sandbox{a, b} {
		own := t.TempDir()
		go func() {
			_, err := s.Run(t.Context(), Command{Script: "echo x > " + own + "/started; i=0; while [ ! -e go ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done", Dir: dir})
			done <- err
		}()
		waitFile(t, filepath.Join(own, "started"))
	}
	deadline := time.Now().Add(5 * time.Second)
	inA, _ := os.ReadDir(recA)
	inB, _ := os.ReadDir(recB)
	for (len(inA) != 1 || len(inB) != 1) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		inA, _ = os.ReadDir(recA)
		inB, _ = os.ReadDir(recB)
	}
	if len(inA) != 1 || len(inB) != 1 {
		t.Errorf("while one command of each runs: %d records in a's directory, %d in b's; want 1 each", len(inA), len(inB))
	}
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o600)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestNilSandboxRunsNothing: a caller built without a Sandbox starts
// nothing; it is told so, as a missing isolation.
func TestNilSandboxRunsNothing(t *testing.T) {
	dir := t.TempDir()
	var s *Sandbox
	_, err := s.Run(t.Context(), Command{Script: "touch ran", Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "no sandbox") {
		t.Errorf("Run on a nil Sandbox: %v, want a refusal naming the missing sandbox", err)
	}
	if _, statErr := os.Stat(filepath.Join(dir, "ran")); statErr == nil {
		t.Error("the command ran")
	}
	if !errors.Is(err, ErrNoIsolation) {
		t.Errorf("%v is not ErrNoIsolation", err)
	}
}
