package loop_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools"
)

// Doctor's agent lines (loop.Checks) name, by agent id in order, each
// agent serve would skip and each of an agent's kit files that does not
// load; an agent that passes gets no line.
func TestChecksNameSkippedAgentsAndBrokenKitFiles(t *testing.T) {
	home := t.TempDir()
	pong := filepath.Join(home, "agents", "pong")
	skill := filepath.Join(pong, "skills", "broken.md")
	if err := os.MkdirAll(filepath.Dir(skill), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(skill, []byte("---\nname: broken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg, err := tools.New(builtin("workspace_read"))
	if err != nil {
		t.Fatal(err)
	}
	agents := map[string]loop.Agent{
		"master": {ID: "master", Dir: home, Routes: []string{"fake:echo"}, Tools: []string{"workspace_read"}},
		"zed":    {ID: "zed", Dir: filepath.Join(home, "agents", "zed"), Routes: []string{"fake:echo"}, Tools: []string{"no_such_tool"}},
		"pong":   {ID: "pong", Dir: pong, Routes: []string{"fake:echo"}},
		"bare":   {ID: "bare", Dir: filepath.Join(home, "agents", "bare")},
	}
	got := loop.Checks(home, agents, reg)
	want := []string{
		"agent bare will be skipped: " + filepath.Join(home, "agents", "bare") + "/agent.yaml: routes: none set",
		"agent pong: skills not loaded: ",
		"agent zed will be skipped: " + filepath.Join(home, "agents", "zed") + `/agent.yaml: tools: unknown tool "no_such_tool"`,
	}
	if len(got) != len(want) {
		t.Fatalf("Checks =\n%s\nwant lines starting\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("line %d = %q, want it to start %q", i, got[i], want[i])
		}
	}
}
