package home

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestComputerOnGivesTheFourTools (R-DSK): computer: "on" gives an agent
// the four computer_* tools beside its own and its computer_apps; nothing
// else does — tools: cannot name them, and computer_apps alone is refused
// where it is written.
func TestComputerOnGivesTheFourTools(t *testing.T) {
	dir := newHome(t)
	writeFile(t, filepath.Join(dir, "agents", "desk", "agent.yaml"), "name: Desk\ntools: [workspace_read]\ncomputer: \"on\"\ncomputer_apps: [gedit, Gtk3-widget-factory]\n")
	writeFile(t, filepath.Join(dir, "agents", "plain", "agent.yaml"), "name: Plain\ncomputer: \"off\"\n")
	writeFile(t, filepath.Join(dir, "agents", "sneaky", "agent.yaml"), "name: Sneaky\ntools: [workspace_read, computer_act]\n")
	writeFile(t, filepath.Join(dir, "agents", "halfway", "agent.yaml"), "name: Halfway\ncomputer_apps: [gedit]\n")
	h := mustLoad(t, dir)
	agents := h.LoopAgents(nil, []string{"workspace_read", "shell_run"})
	want := []string{"workspace_read", "computer_act", "computer_observe", "computer_screenshot", "computer_state"}
	if got := agents["desk"].Tools; !slices.Equal(got, want) {
		t.Errorf("desk tools %v, want %v", got, want)
	}
	if got := agents["desk"].Policy.ComputerApps; !slices.Equal(got, []string{"gedit", "Gtk3-widget-factory"}) {
		t.Errorf("desk computer_apps %v", got)
	}
	for _, id := range []string{"plain", "master"} {
		if slices.ContainsFunc(agents[id].Tools, func(n string) bool { return strings.HasPrefix(n, "computer_") }) {
			t.Errorf("%s has computer tools: %v", id, agents[id].Tools)
		}
	}
	var got []string
	for _, p := range h.Problems {
		got = append(got, p.Error())
	}
	slices.Sort(got)
	wantProblems := []string{
		filepath.Join(dir, "agents", "halfway", "agent.yaml") + `:2:1: computer_apps: set computer: "on" too, or the apps are listed for nothing`,
		filepath.Join(dir, "agents", "sneaky", "agent.yaml") + `:2:25: tools[1]: computer_act comes with computer: "on", not with tools`,
	}
	if !slices.Equal(got, wantProblems) {
		t.Errorf("problems:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantProblems, "\n"))
	}
}
