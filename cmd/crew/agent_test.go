package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/cmd/crew/home"
)

// runCrew runs a crew command in process with CREW_HOME set to crewHome.
func runCrew(t *testing.T, crewHome string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cliEnv{stdout: &out, stderr: &errb, getenv: func(k string) string {
		if k == "CREW_HOME" {
			return crewHome
		}
		return ""
	}}
	code = run(context.Background(), env, args)
	return out.String(), errb.String(), code
}

func TestAgentAddCLI(t *testing.T) {
	dir := t.TempDir()
	if _, err := home.Init(dir); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCrew(t, "", "agent", "add", "kongming", "--home", dir)
	want := "installed agent kongming at " + filepath.Join(dir, "agents", "kongming") + "; restart crew serve to load it\n"
	if code != 0 || out != want {
		t.Fatalf("code %d, stdout %q, stderr %q; want 0, %q", code, out, errOut, want)
	}
	h, err := home.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Problems) != 0 || h.Agents["kongming"] == nil {
		t.Fatalf("Problems %v, agents %v", h.Problems, h.Agents)
	}

	// CREW_HOME works like --home.
	if out, errOut, code := runCrew(t, dir, "agent", "add", "researcher"); code != 0 || !strings.Contains(out, "installed agent researcher") {
		t.Fatalf("via CREW_HOME: code %d, stdout %q, stderr %q", code, out, errOut)
	}

	// A second add refuses and leaves the agent alone.
	before, _ := os.ReadFile(filepath.Join(dir, "agents", "kongming", "agent.yaml"))
	_, errOut, code = runCrew(t, "", "agent", "add", "--home", dir, "kongming")
	if code != 1 || !strings.Contains(errOut, "already exists") {
		t.Fatalf("second add: code %d, stderr %q; want 1 and already exists", code, errOut)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "agents", "kongming", "agent.yaml"))
	if !bytes.Equal(before, after) {
		t.Fatal("second add changed agent.yaml")
	}

	_, errOut, code = runCrew(t, dir, "agent", "add", "nope")
	if code != 1 || !strings.Contains(errOut, `unknown template "nope"`) || !strings.Contains(errOut, "fullstack-developer") {
		t.Fatalf("unknown template: code %d, stderr %q", code, errOut)
	}
}

func TestAgentUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args   []string
		code   int
		stdout bool // usage on stdout rather than stderr
	}{
		{[]string{"agent", "--help"}, 0, true},
		{[]string{"agent", "-h"}, 0, true},
		{[]string{"agent", "add", "--help"}, 0, true},
		{[]string{"agent"}, 2, false},
		{[]string{"agent", "remove", "kongming"}, 2, false},
		{[]string{"agent", "add"}, 2, false},
		{[]string{"agent", "add", "kongming", "researcher"}, 2, false},
	} {
		out, errOut, code := runCrew(t, dir, tc.args...)
		text := errOut
		if tc.stdout {
			text = out
		}
		if code != tc.code || !strings.Contains(text, "Usage: crew agent add <template>") {
			t.Errorf("%v: code %d, stdout %q, stderr %q; want %d and usage", tc.args, code, out, errOut, tc.code)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("usage errors created %v", entries)
	}
	out, _, _ := runCrew(t, dir, "help")
	if !strings.Contains(out, "agent ") || !strings.Contains(out, "kongming") {
		t.Errorf("crew help does not list agent: %q", out)
	}
}
