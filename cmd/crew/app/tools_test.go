package app

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/team"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/schedule"
)

// An agent whose agent.yaml lists no tools gets every tool declared
// Default, the loop's own included; one that lists tools gets those; the
// loop's tools are registry tools like the rest.
func TestAgentToolsFollowDeclarations(t *testing.T) {
	dir := t.TempDir()
	if _, err := home.Init(dir); err != nil {
		t.Fatal(err)
	}
	writeAgent(t, dir, "scout", "name: Scout\nroutes: [fake:echo]\ntools: [workspace_list, ask_user]\n")
	h, err := home.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.New(allTools(tools.Services{}, listOnly())...)
	if err != nil {
		t.Fatal(err)
	}
	agents := loopAgents(h, nil, reg.Defaults())
	master := agents[home.MasterID]
	// The master leads teams by default (R-TEAM): the defaults and the
	// lead's tools.
	if want := append(reg.Defaults(), team.LeadTools...); !slices.Equal(master.Tools, want) {
		t.Errorf("master tools = %v, want the declared defaults and the lead's %v", master.Tools, want)
	}
	for _, name := range []string{loop.DelegateTool, loop.AskUserTool, loop.ProgressNoteTool, "schedule_create", "skill_read", "memory_save", "shell_run"} {
		if !slices.Contains(master.Tools, name) {
			t.Errorf("master lacks %s: %v", name, master.Tools)
		}
	}
	if got := agents["scout"].Tools; !slices.Equal(got, []string{"workspace_list", "ask_user"}) {
		t.Errorf("scout tools = %v", got)
	}
	for _, a := range agents {
		if err := loop.CheckAgent(a, reg); err != nil {
			t.Errorf("loop.CheckAgent(%s): %v", a.ID, err)
		}
	}
}

// docs/tools.md lists every registered tool, and only those.
func TestToolsDocListsEveryTool(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/tools.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "## The tools")
	if !ok {
		t.Fatal("docs/tools.md has no \"## The tools\" section")
	}
	reg, err := tools.New(allTools(tools.Services{}, listOnly())...)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(table, "\n") {
		if name, _, ok := strings.Cut(strings.TrimPrefix(line, "| `"), "`"); ok && strings.HasPrefix(line, "| `") {
			listed = append(listed, name)
		}
	}
	slices.Sort(listed)
	if names := reg.Names(); !slices.Equal(listed, names) {
		t.Errorf("docs/tools.md lists %v, the registry has %v", listed, names)
	}
}

// listOnly is the wiring of a command that lists the tools without
// running them: schedule_create and the cron tools unbound, no other
// family's service.
func listOnly() *wiring {
	return &wiring{create: schedule.NewCreateTool(tools.Services{}), crons: &schedule.CronTools{}}
}
