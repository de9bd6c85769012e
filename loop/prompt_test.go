package loop_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// R-CTX-1: persona → owner → MEMORY.md → roster → date line last, and the
// same files give byte-identical prompts (the provider's cache stays warm).
func TestSystemPromptOrderAndByteStability(t *testing.T) {
	home := t.TempDir()
	agent := filepath.Join(home, "agents", "coach")
	write(t, filepath.Join(agent, "AGENTS.md"), "PERSONA-AGENTS")
	write(t, filepath.Join(agent, "SOUL.md"), "PERSONA-SOUL")
	write(t, filepath.Join(agent, "MEMORY.md"), "AGENT-MEMORY")
	write(t, filepath.Join(home, "users", "owner", "USER.md"), "OWNER-USER")
	write(t, filepath.Join(home, "users", "owner", "facts", "b-diet.md"), "FACT-B")
	write(t, filepath.Join(home, "users", "owner", "facts", "a-sleep.md"), "FACT-A")
	loc, _ := time.LoadLocation("Asia/Ho_Chi_Minh")
	p := loop.Prompt{AgentDir: agent, HomeDir: home, Roster: "- ROSTER-LINE", Now: time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC), Location: loc}
	first, err := loop.SystemPrompt(p)
	if err != nil {
		t.Fatal(err)
	}
	second, _ := loop.SystemPrompt(p)
	if first != second {
		t.Fatal("two assemblies of unchanged files differ")
	}
	order := []string{"PERSONA-AGENTS", "PERSONA-SOUL", "OWNER-USER", "FACT-A", "FACT-B", "AGENT-MEMORY", "ROSTER-LINE", "Today: 2026-12-01."}
	last := -1
	for _, part := range order {
		i := strings.Index(first, part)
		if i <= last {
			t.Fatalf("%q out of order in:\n%s", part, first)
		}
		last = i
	}
	if !strings.HasSuffix(first, "Today: 2026-12-01.") {
		t.Errorf("the date line is not last:\n%s", first)
	}
}

// Within a turn, every model call gets the same system prompt bytes while
// no file changes.
func TestSystemPromptByteIdenticalAcrossSteps(t *testing.T) {
	tool := &counter{name: "look"}
	h := newHarness(t, map[string][]reply{"fake:a": {use("look", `{"a":1}`), use("look", `{"a":2}`), say("done")}}, tool)
	h.deps.HomeDir = t.TempDir()
	write(t, filepath.Join(h.deps.HomeDir, "users", "owner", "USER.md"), "The owner runs in the morning.")
	h.roster = "- Assistant (master): answers first"
	h.send("go")
	h.turn()
	seen := h.models["fake:a"].seen
	if len(seen) != 3 {
		t.Fatalf("%d calls", len(seen))
	}
	for i := 1; i < len(seen); i++ {
		if systemOf(seen[i]) != systemOf(seen[0]) {
			t.Errorf("call %d's system prompt differs from the first", i+1)
		}
	}
	if !strings.Contains(systemOf(seen[0]), "The owner runs in the morning.") {
		t.Errorf("owner section missing")
	}
}

// stepsTool runs the next of its edits each time it is called.
type stepsTool struct {
	edits []func()
	n     int
}

func (s *stepsTool) Def() tools.Def {
	return tools.Def{Name: "edit", Description: "test edits", Params: json.RawMessage(`{"type":"object"}`)}
}

func (s *stepsTool) Run(context.Context, tools.Env, json.RawMessage) (tools.Result, error) {
	s.edits[s.n]()
	s.n++
	return tools.Result{Output: "edited"}, nil
}

// Issue 30 item 3 beside R-HOME-4: a pass keeps the system prompt it
// assembled while the files it read are unchanged (a step stats them),
// and assembles it again when one is rewritten — even to the same size —,
// added or removed: a persona file, a fact, a kit command.
func TestSystemPromptAssembledAgainOnlyWhenItsFilesChange(t *testing.T) {
	var replies []reply
	for range 5 {
		replies = append(replies, use("edit", `{}`))
	}
	tool := &stepsTool{}
	h := newHarness(t, map[string][]reply{"fake:a": append(replies, say("done"))}, tool)
	h.deps.HomeDir = t.TempDir()
	facts := filepath.Join(h.deps.HomeDir, "users", "owner", "facts")
	os.MkdirAll(facts, 0o700)
	soul := filepath.Join(h.agent.Dir, "SOUL.md")
	os.WriteFile(soul, []byte("Calm AAAA."), 0o600)
	tool.edits = []func(){
		func() { os.WriteFile(soul, []byte("Calm BBBB."), 0o600) }, // same size
		func() { os.WriteFile(filepath.Join(facts, "food.md"), []byte("Likes phở."), 0o600) },
		func() {
			os.MkdirAll(filepath.Join(h.agent.Dir, ".agents", "commands"), 0o700)
			os.WriteFile(filepath.Join(h.agent.Dir, ".agents", "commands", "plan.md"), []byte("---\ndescription: Plan the week\n---\nPlan it."), 0o600)
		},
		func() {}, // nothing changes
		func() { os.Remove(filepath.Join(facts, "food.md")) },
	}
	h.agent.Tools = append(h.agent.Tools, "edit")
	h.send("go")
	h.turn()
	seen := h.models["fake:a"].seen
	if len(seen) != 6 {
		t.Fatalf("%d model calls", len(seen))
	}
	has := func(i int, s string) bool { return strings.Contains(systemOf(seen[i]), s) }
	for _, c := range []struct {
		step int
		ok   bool
		what string
	}{
		{0, has(0, "Calm AAAA.") && !has(0, "Likes phở."), "the first prompt"},
		{1, has(1, "Calm BBBB."), "SOUL.md rewritten to the same size"},
		{2, has(2, "Likes phở."), "a fact added"},
		{3, has(3, "Plan the week"), "a kit command added"},
		{4, systemOf(seen[4]) == systemOf(seen[3]), "nothing changed: the same prompt"},
		{5, !has(5, "Likes phở.") && has(5, "Plan the week"), "the fact removed"},
	} {
		if !c.ok {
			t.Errorf("step %d (%s): %q", c.step+1, c.what, systemOf(seen[c.step]))
		}
	}
}
