package loop

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkPromptStamp: what a step pays to look at the prompt's files
// (R-HOME-4) on a fresh home's master agent (the home is the agent's
// folder): the persona files, USER.md, the facts and the kit folders.
func BenchmarkPromptStamp(b *testing.B) {
	dir := b.TempDir()
	for _, f := range []string{"AGENTS.md", "SOUL.md", "MEMORY.md", "users/owner/USER.md", "users/owner/facts/food.md", "skills/delegation.md"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o700)
		if err := os.WriteFile(filepath.Join(dir, f), []byte("# "+f), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	p := Prompt{AgentDir: dir, HomeDir: dir}
	var buf []byte
	for b.Loop() {
		buf = promptStamp(buf[:0], p)
	}
}
