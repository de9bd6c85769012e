package loop_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
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

// SkipBroken leaves out the agents CheckAgent refuses and those whose MCP
// servers cannot be had, a line each, and the others keep the servers
// they are given.
func TestSkipBrokenLeavesOutWhatCannotRun(t *testing.T) {
	reg, err := tools.New(builtin("workspace_read"))
	if err != nil {
		t.Fatal(err)
	}
	agents := map[string]loop.Agent{
		"ok":      {ID: "ok", Dir: "/h/ok", Routes: []string{"fake:echo"}, Tools: []string{"workspace_read"}, MCP: []string{"gh", "off"}},
		"bare":    {ID: "bare", Dir: "/h/bare"},
		"nomcp":   {ID: "nomcp", Dir: "/h/nomcp", Routes: []string{"fake:echo"}, MCP: []string{"nope"}},
		"plain":   {ID: "plain", Dir: "/h/plain", Routes: []string{"fake:echo"}},
		"badtool": {ID: "badtool", Dir: "/h/badtool", Routes: []string{"fake:echo"}, Tools: []string{"no_such_tool"}, MCP: []string{"nope"}},
	}
	servers := func(a loop.Agent) ([]string, error) {
		if slices.Contains(a.MCP, "nope") {
			return nil, errors.New(a.Dir + "/agent.yaml: mcp: unknown server \"nope\"")
		}
		return slices.DeleteFunc(slices.Clone(a.MCP), func(n string) bool { return n == "off" }), nil
	}
	problems := loop.SkipBroken(agents, reg, servers)
	slices.Sort(problems)
	want := []string{
		"/h/badtool/agent.yaml: tools: unknown tool \"no_such_tool\"",
		"/h/bare/agent.yaml: routes: none set",
		"/h/nomcp/agent.yaml: mcp: unknown server \"nope\"",
	}
	if len(problems) != len(want) {
		t.Fatalf("problems =\n%s\nwant lines starting\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(problems[i], want[i]) {
			t.Errorf("problem %d = %q, want it to start %q", i, problems[i], want[i])
		}
	}
	if got := slices.Sorted(maps.Keys(agents)); !slices.Equal(got, []string{"ok", "plain"}) {
		t.Errorf("agents left %v, want ok and plain", got)
	}
	if got := agents["ok"].MCP; !slices.Equal(got, []string{"gh"}) {
		t.Errorf("ok's MCP servers %v, want the kept [gh]", got)
	}
}
