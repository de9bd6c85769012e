package consolidate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/my-agent-crew/crew/tools"
)

// memoryFile is the agent's MEMORY.md.
func memoryFile(agentDir string) string { return filepath.Join(agentDir, "MEMORY.md") }

// readMemory returns MEMORY.md; a missing file is "".
func readMemory(agentDir string) (string, error) {
	b, err := os.ReadFile(memoryFile(agentDir))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read MEMORY.md: %w", err)
	}
	return string(b), nil
}

// writeMemory replaces MEMORY.md atomically (tools.WriteAtomic: a temp
// file beside it, fsync, rename, fsync of the folder), so a crash leaves
// the old file or the new one, never half of one. An existing file keeps
// its permissions.
func writeMemory(agentDir, text string) error {
	root, err := os.OpenRoot(agentDir)
	if err != nil {
		return fmt.Errorf("write MEMORY.md: %w", err)
	}
	defer root.Close()
	if err := tools.WriteAtomic(root, "MEMORY.md", []byte(text), 0o644); err != nil {
		return fmt.Errorf("write MEMORY.md: %w", err)
	}
	return nil
}
