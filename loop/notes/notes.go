package notes

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools/memory"
)

// Item is one thing the turn notes can tell.
type Item struct {
	Key     string // stable across turns: "summary:<channel>", "memory/2026-11-30.md"
	Title   string // how the block names it
	Content string // normalized (see Items); "" when empty or missing
}

// Summary is the summary of the most recent conversation on a channel; the
// zero value means there is none.
type Summary struct {
	Channel, Conversation, Text string
	LastAt                      time.Time
}

// Items returns what the turn notes may tell at now: prev's summary when
// there is one, then yesterday's and today's notes (dates in loc, nil
// meaning UTC). A missing note is an empty item, so Compose can report a
// note that was emptied.
//
// Content is the text with line endings made "\n", trailing spaces and
// tabs removed from every line and trailing blank lines dropped. So
// appending whole lines to a note only extends its content, which Compose
// tells as new lines, while invisible whitespace changes tell nothing.
func Items(agentDir string, now time.Time, loc *time.Location, prev Summary) ([]Item, error) {
	if agentDir == "" {
		return nil, fmt.Errorf("notes: items: %w", ErrNoDir)
	}
	if loc == nil {
		loc = time.UTC
	}
	var items []Item
	if prev.Text != "" {
		title := "Previous conversation"
		if !prev.LastAt.IsZero() {
			title += " (last at " + prev.LastAt.In(loc).Format("2006-01-02 15:04") + ")"
		}
		items = append(items, Item{Key: "summary:" + prev.Channel, Title: title, Content: memory.Normalize(prev.Text)})
	}
	y, m, d := now.In(loc).Date()
	for _, day := range []struct {
		name string
		date time.Time
	}{
		{"Yesterday's notes", time.Date(y, m, d-1, 0, 0, 0, 0, loc)},
		{"Today's notes", time.Date(y, m, d, 0, 0, 0, 0, loc)},
	} {
		key := memory.DailyNote(day.date)
		data, err := os.ReadFile(filepath.Join(agentDir, filepath.FromSlash(key)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("memory: read %s: %w", key, err)
		}
		items = append(items, Item{Key: key, Title: day.name + " (" + key + ")", Content: memory.Normalize(string(data))})
	}
	return items, nil
}

// Compose returns the notes that tell what changed in items since told, or
// nil when nothing did. Blocks follow the order of items, separated by a
// blank line:
//
//	<Title>:\n<content>                          untold, not empty
//	<Title>, new lines since last told:\n<new>   grew by whole lines
//	<Title> (rewritten; this replaces the version told before):\n<content>
//	<Title>: now empty.                          told, now empty
//
// An untold empty item and an unchanged one (same length and digest) tell
// nothing. Told lists exactly the items told, each with its whole current
// length and digest.
func Compose(told map[string]events.NoteTold, items []Item) *events.TurnNotes {
	var blocks []string
	var now []events.NoteTold
	for _, it := range items {
		prev, known := told[it.Key]
		b := block(prev, known, it)
		if b == "" {
			continue
		}
		blocks = append(blocks, b)
		now = append(now, events.NoteTold{Key: it.Key, Len: len(it.Content), Digest: Digest(it.Content)})
	}
	if len(blocks) == 0 {
		return nil
	}
	return &events.TurnNotes{Text: strings.Join(blocks, "\n\n"), Told: now}
}

// block is what to tell of it given what was told, "" for nothing.
func block(prev events.NoteTold, known bool, it Item) string {
	c := it.Content
	switch {
	case !known && c == "":
		return ""
	case !known:
		return it.Title + ":\n" + capped(c, it)
	case len(c) == prev.Len && Digest(c) == prev.Digest:
		return ""
	case c == "":
		return it.Title + ": now empty."
	case grew(prev, c) && len(c)-prev.Len > MaxSectionChars:
		return fmt.Sprintf("%s grew by %d characters since last told, too much to repeat here: read the file (%s) for the new lines.", it.Title, len(c)-prev.Len, it.Key)
	case grew(prev, c):
		return it.Title + ", new lines since last told:\n" + strings.TrimPrefix(c[prev.Len:], "\n")
	default:
		return it.Title + " (rewritten; this replaces the version told before):\n" + capped(c, it)
	}
}

// MaxSectionChars caps one section of the turn notes (a daily note, a
// summary): longer text is cut at a line end with a marker, and growth
// past it is told as "grew, read the file", so the notes never flood the
// context.
const MaxSectionChars = 24000

// capped is c cut to MaxSectionChars at a line end, with a marker.
func capped(c string, it Item) string {
	if len(c) <= MaxSectionChars {
		return c
	}
	cut := c[:MaxSectionChars]
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i]
	}
	return cut + fmt.Sprintf("\n[… cut at %d of %d characters: read the file (%s) for the rest.]", len(cut), len(c), it.Key)
}

// grew reports whether c is what was told plus whole new lines. A told
// line that was merely extended is a rewrite, not new lines.
func grew(prev events.NoteTold, c string) bool {
	return prev.Len < len(c) &&
		(prev.Len == 0 || c[prev.Len] == '\n') &&
		Digest(c[:prev.Len]) == prev.Digest
}

// Digest is the lowercase hex sha256 of s, as NoteTold records it.
func Digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
