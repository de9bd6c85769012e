package loop

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SystemPrompt assembles an agent's system prompt from its files, read anew
// at every step (R-HOME-4): AGENTS.md, SOUL.md, then the date line last —
// stable parts first so the provider's prompt cache keeps them.
func SystemPrompt(agentDir string, now time.Time, loc *time.Location) (string, error) {
	var b strings.Builder
	for _, name := range []string{"AGENTS.md", "SOUL.md"} {
		data, err := os.ReadFile(filepath.Join(agentDir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("system prompt: %w", err)
		}
		text := strings.TrimSpace(string(data))
		if text == "" {
			continue
		}
		b.WriteString(text)
		b.WriteString("\n\n")
	}
	if loc == nil {
		loc = time.UTC
	}
	fmt.Fprintf(&b, "Today: %s.", now.In(loc).Format("2006-01-02"))
	return b.String(), nil
}
