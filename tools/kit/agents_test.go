package kit

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSubAgents(t *testing.T) {
	home, agent := homeAndAgent(t)
	write(t, home, ".agents/agents/reviewer.md", "---\nname: reviewer\ndescription: Home reviewer\n---\nHome.")
	write(t, home, ".agents/agents/scout.md", "---\ndescription: Finds files\ntools: workspace_glob, workspace_grep ,\nmodel: cheap\n---\nYou find files.")
	write(t, agent, ".agents/agents/rev.md", "---\nname: reviewer\ndescription: Reviews diffs\ntools:\n  - workspace_read\n  - shell_run\n---\nYou review.")
	write(t, agent, ".agents/agents/none.md", "---\ndescription: Thinks only\ntools: []\n---\nThink.")

	got, err := SubAgents(home, agent)
	if err != nil {
		t.Fatal(err)
	}
	want := []SubAgent{
		{Name: "none", Description: "Thinks only", Path: filepath.Join(agent, ".agents/agents/none.md"), Prompt: "Think.", Tools: []string{}},
		{Name: "reviewer", Description: "Reviews diffs", Path: filepath.Join(agent, ".agents/agents/rev.md"), Prompt: "You review.", Tools: []string{"workspace_read", "shell_run"}},
		{Name: "scout", Description: "Finds files", Path: filepath.Join(home, ".agents/agents/scout.md"), Prompt: "You find files.", Tools: []string{"workspace_glob", "workspace_grep"}, Model: "cheap"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.Name || g.Description != w.Description || g.Path != w.Path || g.Prompt != w.Prompt || g.Model != w.Model ||
			!slices.Equal(g.Tools, w.Tools) || (g.Tools == nil) != (w.Tools == nil) {
			t.Errorf("sub-agent %d:\n got %#v\nwant %#v", i, g, w)
		}
	}
}

func TestSubAgentsToolsUnrestricted(t *testing.T) {
	home := t.TempDir()
	write(t, home, ".agents/agents/a.md", "---\ndescription: no tools key\n---\nA.")
	write(t, home, ".agents/agents/b.md", "No front matter at all.")
	got, err := SubAgents(home, home)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range got {
		if a.Tools != nil {
			t.Errorf("%s: tools %#v, want nil", a.Name, a.Tools)
		}
	}
}

func TestSubAgentsBadTools(t *testing.T) {
	home := t.TempDir()
	num := write(t, home, ".agents/agents/num.md", "---\ntools: 3\n---\nA.")
	item := write(t, home, ".agents/agents/item.md", "---\ntools:\n  - ok\n  - [nested]\n---\nA.")
	_, err := SubAgents(home, "")
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{num + ":2:8: tools must be a list", item + ":4:5: a tool name must be text"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
}
