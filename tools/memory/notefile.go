package memory

import (
	"strings"
	"time"
)

// DailyNote is the daily note of date's day, relative to the agent's
// folder: what memory_save appends to and the turn notes tell.
func DailyNote(date time.Time) string {
	return "memory/" + date.Format("2006-01-02") + ".md"
}

// Normalize makes line endings "\n", removes trailing spaces and tabs
// from every line and drops trailing blank lines: how notes are written
// and how the turn notes compare them.
func Normalize(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}
