package consolidate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
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

// writeMemory replaces MEMORY.md atomically: a temp file beside it, fsync,
// rename, fsync of the folder, so a crash leaves the old file or the new
// one, never half of one. An existing file keeps its permissions.
func writeMemory(agentDir, text string) (err error) {
	path := memoryFile(agentDir)
	perm := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(agentDir, ".MEMORY.md.tmp-*")
	if err != nil {
		return fmt.Errorf("write MEMORY.md: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.WriteString(text); err != nil {
		return fmt.Errorf("write MEMORY.md: %w", err)
	}
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write MEMORY.md: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("write MEMORY.md: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write MEMORY.md: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write MEMORY.md: %w", err)
	}
	d, err := os.Open(agentDir)
	if err != nil {
		return fmt.Errorf("write MEMORY.md: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) { // some filesystems cannot sync a folder
		return fmt.Errorf("write MEMORY.md: sync folder: %w", err)
	}
	return nil
}
