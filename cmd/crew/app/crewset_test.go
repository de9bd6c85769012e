package app

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools"
)

// Kit sub-agents (.agents/agents/*.md, Claude Code's format) join the crew
// as delegate targets: a home-level one with the master's settings, an
// agent's own as "<agent>-<name>"; Claude's tool names map to ours; a
// model that is not a route inherits the parent's.
func TestKitSubAgentsJoinTheCrew(t *testing.T) {
	dir := t.TempDir()
	if _, err := home.Init(dir); err != nil {
		t.Fatal(err)
	}
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".agents/agents/reviewer.md", "---\nname: reviewer\ndescription: Reviews a change.\ntools: Read, Grep\nmodel: sonnet\n---\nYou review changes. Be specific.\n")
	write("agents/pong/.agents/agents/drafter.md", "---\ndescription: Drafts mail.\nmodel: fake:echo\n---\nYou draft mail in the owner's voice.\n")
	write(".agents/agents/master.md", "---\ndescription: Collides.\n---\nx\n")
	h, err := home.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.New(allTools(tools.Services{}, listOnly())...)
	if err != nil {
		t.Fatal(err)
	}
	set := crewFiles{dir: dir, reg: reg, getenv: os.Getenv, secrets: events.NewRedactor()}.build(h)
	rev, ok := set.Agents["reviewer"]
	if !ok {
		t.Fatalf("reviewer not in the crew; problems: %v", set.Problems)
	}
	master := set.Agents[home.MasterID]
	if rev.Persona != "You review changes. Be specific." || !slices.Equal(rev.Tools, []string{"workspace_read", "workspace_grep"}) ||
		!slices.Equal(rev.Routes, master.Routes) || rev.Workspace != master.Workspace {
		t.Errorf("reviewer = %+v", rev)
	}
	drafter, ok := set.Agents["pong-drafter"]
	if !ok || !slices.Equal(drafter.Routes, []string{"fake:echo"}) || slices.Contains(drafter.Tools, loop.DelegateTool) ||
		drafter.Workspace != filepath.Join(dir, "agents", "pong", "workspace") {
		t.Errorf("pong-drafter = %+v (%v)", drafter, ok)
	}
	if !strings.Contains(set.Roster, "; skills: delegation") {
		t.Errorf("roster lists no skills:\n%s", set.Roster)
	}
	if !strings.Contains(set.Roster, "- reviewer (reviewer): Reviews a change. (kit sub-agent)") {
		t.Errorf("roster:\n%s", set.Roster)
	}
	if len(set.Problems) != 1 || !strings.Contains(set.Problems[0], "master.md") {
		t.Errorf("problems = %v, want the colliding master.md", set.Problems)
	}
	// Its persona is its whole persona: no AGENTS.md, SOUL.md or MEMORY.md.
	sys, err := loop.SystemPrompt(loop.Prompt{AgentDir: rev.Dir, Persona: rev.Persona, HomeDir: dir, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sys, "You review changes.") || strings.Contains(sys, "# Your memory") {
		t.Errorf("system prompt:\n%s", sys)
	}
}

// A kit sub-agent's file is read when the crew loads (its prompt becomes
// the persona), so adding or editing one must reload the crew.
func TestCrewReloadsOnKitSubAgentEdit(t *testing.T) {
	dir := t.TempDir()
	if _, err := home.Init(dir); err != nil {
		t.Fatal(err)
	}
	h, err := home.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.New(allTools(tools.Services{}, listOnly())...)
	if err != nil {
		t.Fatal(err)
	}
	cr, files := &Crew{}, crewFiles{dir: dir, reg: reg, getenv: os.Getenv, secrets: events.NewRedactor()}
	cr.Start(files, home.MasterID, slog.New(slog.DiscardHandler), files.build(h))
	p := filepath.Join(dir, "agents", "pong", ".agents", "agents", "drafter.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("---\ndescription: Drafts mail.\n---\nYou draft mail.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cr.ReloadIfChanged()
	a, ok := cr.Agent("pong-drafter")
	if !ok || a.Persona != "You draft mail." {
		t.Fatalf("after adding the file: pong-drafter = %+v (%v)", a, ok)
	}
	if err := os.WriteFile(p, []byte("---\ndescription: Drafts mail.\n---\nYou draft short mail.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cr.ReloadIfChanged()
	if a, _ := cr.Agent("pong-drafter"); a.Persona != "You draft short mail." {
		t.Errorf("after editing the file: persona = %q", a.Persona)
	}
}
