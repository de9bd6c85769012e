package consolidate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
)

// readMemory returns MEMORY.md; a missing file is "".
func readMemory(agentDir string) (string, error) { return readFile(agentDir, memoryName) }

// memoryName is the file a consolidation rewrites.
const memoryName = "MEMORY.md"

// readFile returns the agent's file name (MEMORY.md, AGENTS.md, SOUL.md);
// a missing file is "".
func readFile(agentDir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(agentDir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	return string(b), nil
}

// writeMemory replaces MEMORY.md atomically (tools.WriteAtomic: a temp
// file beside it, fsync, rename, fsync of the folder), so a crash leaves
// the old file or the new one, never half of one. An existing file keeps
// its permissions.
func writeMemory(r *events.Redactor, agentDir, text string) error {
	return writeFile(r, agentDir, memoryName, text)
}

// writeFile replaces the agent's file name atomically, as writeMemory.
func writeFile(r *events.Redactor, agentDir, name, text string) error {
	root, err := os.OpenRoot(agentDir)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	defer root.Close()
	if err := tools.WriteAtomic(r, root, name, []byte(text), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
