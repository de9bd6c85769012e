package loop_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/loop"
	"github.com/tmc/langchaingo/llms"
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
	h.deps.Roster = func() string { return "- Assistant (master): answers first" }
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
	_ = llms.ChatMessageTypeSystem
}
