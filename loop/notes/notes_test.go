package notes_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/notes"
)

const today = "memory/2026-11-30.md"

func item(content string) notes.Item {
	return notes.Item{Key: today, Title: "Today's notes (" + today + ")", Content: content}
}

// toldOf is what a conversation was told of content.
func toldOf(key, content string) map[string]events.NoteTold {
	return map[string]events.NoteTold{key: {Key: key, Len: len(content), Digest: notes.Digest(content)}}
}

type composeCase struct {
	name  string
	told  map[string]events.NoteTold
	items []notes.Item
	want  string // notes text; "" means nil notes
}

func runCompose(t *testing.T, cases []composeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := notes.Compose(tc.told, tc.items)
			if tc.want == "" {
				if got != nil {
					t.Fatalf("Compose = %+v, want nil", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("Compose = nil, want %q", tc.want)
			}
			if got.Text != tc.want {
				t.Errorf("Text:\n%s\nwant:\n%s", got.Text, tc.want)
			}
			checkTold(t, got, tc.items)
		})
	}
}

// checkTold checks that Told lists each item the text names, with its
// whole current length and digest, in item order.
func checkTold(t *testing.T, got *events.TurnNotes, items []notes.Item) {
	t.Helper()
	var want []events.NoteTold
	for _, it := range items {
		if strings.Contains(got.Text, it.Title) {
			want = append(want, events.NoteTold{Key: it.Key, Len: len(it.Content), Digest: notes.Digest(it.Content)})
		}
	}
	if !slices.Equal(got.Told, want) {
		t.Errorf("Told = %+v, want %+v", got.Told, want)
	}
}

func TestTurnNotesUntoldItemIsToldWhole(t *testing.T) {
	runCompose(t, []composeCase{
		{"note", nil, []notes.Item{item("- 09:00 a\n- 10:00 b")},
			"Today's notes (memory/2026-11-30.md):\n- 09:00 a\n- 10:00 b"},
		{"other item told, this one not", toldOf("memory/2026-11-29.md", "x"), []notes.Item{item("- 09:00 a")},
			"Today's notes (memory/2026-11-30.md):\n- 09:00 a"},
		{"untold and empty tells nothing", nil, []notes.Item{item("")}, ""},
	})
}

func TestTurnNotesAppendedToldOnlyNewLines(t *testing.T) {
	runCompose(t, []composeCase{
		{"one new line", toldOf(today, "- 09:00 a"), []notes.Item{item("- 09:00 a\n- 10:00 b")},
			"Today's notes (memory/2026-11-30.md), new lines since last told:\n- 10:00 b"},
		{"two new lines", toldOf(today, "- 09:00 a"), []notes.Item{item("- 09:00 a\n- 10:00 b\n- 11:00 c")},
			"Today's notes (memory/2026-11-30.md), new lines since last told:\n- 10:00 b\n- 11:00 c"},
		{"grew from told-empty", toldOf(today, ""), []notes.Item{item("- 09:00 a")},
			"Today's notes (memory/2026-11-30.md), new lines since last told:\n- 09:00 a"},
		{"a told line extended is a rewrite", toldOf(today, "- 09:00 a"), []notes.Item{item("- 09:00 ab")},
			"Today's notes (memory/2026-11-30.md) (rewritten; this replaces the version told before):\n- 09:00 ab"},
	})
}

func TestTurnNotesRewrittenSaysItReplaces(t *testing.T) {
	runCompose(t, []composeCase{
		{"edited line", toldOf(today, "- 09:00 a\n- 10:00 b"), []notes.Item{item("- 09:00 A\n- 10:00 b")},
			"Today's notes (memory/2026-11-30.md) (rewritten; this replaces the version told before):\n- 09:00 A\n- 10:00 b"},
		{"shrank", toldOf(today, "- 09:00 a\n- 10:00 b"), []notes.Item{item("- 09:00 a")},
			"Today's notes (memory/2026-11-30.md) (rewritten; this replaces the version told before):\n- 09:00 a"},
		{"same length, other bytes", toldOf(today, "- 09:00 a"), []notes.Item{item("- 09:00 b")},
			"Today's notes (memory/2026-11-30.md) (rewritten; this replaces the version told before):\n- 09:00 b"},
		{"newer summary on the channel", toldOf("summary:web", "Owner planned the trip."),
			[]notes.Item{{Key: "summary:web", Title: "Previous conversation (last at 2026-11-30 08:00)", Content: "Owner booked a hotel."}},
			"Previous conversation (last at 2026-11-30 08:00) (rewritten; this replaces the version told before):\nOwner booked a hotel."},
	})
}

func TestTurnNotesEmptiedIsOneLine(t *testing.T) {
	runCompose(t, []composeCase{
		{"emptied", toldOf(today, "- 09:00 a"), []notes.Item{item("")},
			"Today's notes (memory/2026-11-30.md): now empty."},
		{"told empty, still empty", toldOf(today, ""), []notes.Item{item("")}, ""},
	})
}

func TestTurnNotesNothingNewGivesNoNotes(t *testing.T) {
	runCompose(t, []composeCase{
		{"no items", nil, nil, ""},
		{"all told", toldOf(today, "- 09:00 a"), []notes.Item{item("- 09:00 a")}, ""},
		{"summary told, only the title moved", toldOf("summary:web", "s"),
			[]notes.Item{{Key: "summary:web", Title: "Previous conversation (last at 2026-11-30 08:00)", Content: "s"}}, ""},
	})
	if got := loop.Framed(nil, "hi\n"); got != "hi\n" {
		t.Errorf("Framed(nil) = %q, want the message as written", got)
	}
	if got := loop.Framed(&events.TurnNotes{}, "hi"); got != "hi" {
		t.Errorf("Framed(empty) = %q, want the message as written", got)
	}
}

func TestTurnNotesBlocksInItemOrder(t *testing.T) {
	items := []notes.Item{
		{Key: "summary:web", Title: "Previous conversation (last at 2026-11-29 23:30)", Content: "Owner asked for a packing list."},
		{Key: "memory/2026-11-29.md", Title: "Yesterday's notes (memory/2026-11-29.md)", Content: "- 22:00 old"},
		item("- 09:00 a\n- 10:00 b"),
	}
	told := toldOf("memory/2026-11-29.md", "- 22:00 old")
	told[today] = toldOf(today, "- 09:00 a")[today]
	runCompose(t, []composeCase{{"summary then today", told, items,
		"Previous conversation (last at 2026-11-29 23:30):\nOwner asked for a packing list.\n\n" +
			"Today's notes (memory/2026-11-30.md), new lines since last told:\n- 10:00 b"}})
}

func TestTurnNotesFramed(t *testing.T) {
	notes := &events.TurnNotes{Text: "Today's notes (memory/2026-11-30.md):\n- 09:00 a"}
	got := loop.Framed(notes, "hello")
	want := "[Your memory — inserted by the system before this message, not the user's words]\n" +
		"Today's notes (memory/2026-11-30.md):\n- 09:00 a\n[End of memory]\n\nhello"
	if got != want {
		t.Errorf("Framed:\n%s\nwant:\n%s", got, want)
	}
}

func TestDigestIsSHA256Hex(t *testing.T) {
	if got, want := notes.Digest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"; got != want {
		t.Errorf("Digest(\"\") = %s, want %s", got, want)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestItems(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	// 23:30 UTC on the 29th is already the 30th in the owner's zone.
	now := time.Date(2026, 11, 29, 23, 30, 0, 0, time.UTC)
	prev := notes.Summary{Channel: "web", Conversation: "c1", Text: "Owner asked for a list.\n\n",
		LastAt: time.Date(2026, 11, 29, 22, 30, 0, 0, time.UTC)}

	tests := []struct {
		name  string
		files map[string]string
		prev  notes.Summary
		want  []notes.Item
	}{
		{"missing files are empty items", nil, notes.Summary{}, []notes.Item{
			{Key: "memory/2026-11-29.md", Title: "Yesterday's notes (memory/2026-11-29.md)"},
			{Key: "memory/2026-11-30.md", Title: "Today's notes (memory/2026-11-30.md)"},
		}},
		{"summary first, trailing whitespace trimmed", map[string]string{
			"memory/2026-11-29.md": "- 21:00 y  \r\n\r\n",
			"memory/2026-11-30.md": "- 00:10 t\t\n- 00:20 u\n\n \n",
			"memory/2026-11-28.md": "- too old",
		}, prev, []notes.Item{
			{Key: "summary:web", Title: "Previous conversation (last at 2026-11-29 23:30)", Content: "Owner asked for a list."},
			{Key: "memory/2026-11-29.md", Title: "Yesterday's notes (memory/2026-11-29.md)", Content: "- 21:00 y"},
			{Key: "memory/2026-11-30.md", Title: "Today's notes (memory/2026-11-30.md)", Content: "- 00:10 t\n- 00:20 u"},
		}},
		{"whitespace-only note is empty", map[string]string{"memory/2026-11-30.md": " \n\t\n"}, notes.Summary{}, []notes.Item{
			{Key: "memory/2026-11-29.md", Title: "Yesterday's notes (memory/2026-11-29.md)"},
			{Key: "memory/2026-11-30.md", Title: "Today's notes (memory/2026-11-30.md)"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				writeFile(t, filepath.Join(dir, name), content)
			}
			got, err := notes.Items(dir, now, berlin, tc.prev)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Items:\n%+v\nwant:\n%+v", got, tc.want)
			}
		})
	}
	if _, err := notes.Items("", now, berlin, notes.Summary{}); err == nil {
		t.Error("Items with no agent folder: no error")
	}
}

// TestTurnNotesAcrossTurns follows one conversation through the files the
// notes are read from, folding Told as the loop does.
func TestTurnNotesAcrossTurns(t *testing.T) {
	dir := t.TempDir()
	note := filepath.Join(dir, "memory", "2026-11-30.md")
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	told := map[string]events.NoteTold{}

	steps := []struct {
		name  string
		write *string // the note's new content; nil removes it
		want  string
	}{
		{"no notes yet", nil, ""},
		{"first line", ptr("- 09:00 a\n"), "Today's notes (memory/2026-11-30.md):\n- 09:00 a"},
		{"nothing new", ptr("- 09:00 a\n"), ""},
		{"appended", ptr("- 09:00 a\n- 10:00 b\n"), "Today's notes (memory/2026-11-30.md), new lines since last told:\n- 10:00 b"},
		{"rewritten", ptr("- 10:00 b\n"), "Today's notes (memory/2026-11-30.md) (rewritten; this replaces the version told before):\n- 10:00 b"},
		{"removed", nil, "Today's notes (memory/2026-11-30.md): now empty."},
		{"back", ptr("- 13:00 c\n"), "Today's notes (memory/2026-11-30.md), new lines since last told:\n- 13:00 c"},
	}
	for _, s := range steps {
		if s.write == nil {
			os.Remove(note)
		} else {
			writeFile(t, note, *s.write)
		}
		items, err := notes.Items(dir, now, time.UTC, notes.Summary{})
		if err != nil {
			t.Fatal(err)
		}
		notes := notes.Compose(told, items)
		got := ""
		if notes != nil {
			got = notes.Text
			for _, nt := range notes.Told {
				told[nt.Key] = nt
			}
		}
		if got != s.want {
			t.Errorf("%s: notes %q, want %q", s.name, got, s.want)
		}
	}
}

func ptr(s string) *string { return &s }

// Each section is capped at a line end with a marker; growth past the cap
// is told as "grew, read the file".
func TestTurnNotesSectionCapped(t *testing.T) {
	line := strings.Repeat("ghi chú ", 10) + "\n"
	big := strings.TrimSuffix(strings.Repeat(line, notes.MaxSectionChars/len(line)+50), "\n")
	it := notes.Item{Key: "memory/2026-12-01.md", Title: "Today's notes", Content: big}
	n := notes.Compose(nil, []notes.Item{it})
	if len(n.Text) > notes.MaxSectionChars+300 || !strings.Contains(n.Text, "[… cut at ") || !strings.Contains(n.Text, "read the file (memory/2026-12-01.md)") {
		t.Fatalf("first telling: %d chars, ends %q", len(n.Text), n.Text[len(n.Text)-120:])
	}
	if i := strings.Index(n.Text, "\n[… cut"); i < 0 || !strings.HasSuffix(n.Text[:i], strings.TrimSuffix(line, "\n")) {
		t.Errorf("not cut at a line end")
	}
	grown := it
	grown.Content = big + "\n" + big
	n2 := notes.Compose(map[string]events.NoteTold{it.Key: n.Told[0]}, []notes.Item{grown})
	if !strings.Contains(n2.Text, "grew by") || !strings.Contains(n2.Text, "read the file") || len(n2.Text) > 500 {
		t.Errorf("growth told as %q", n2.Text[:min(len(n2.Text), 200)])
	}
}
