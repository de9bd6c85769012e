package notes_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/loop/notes"
)

func TestSummaryTranscriptLinesStartWithOwnersDateTime(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	tests := []struct {
		name  string
		lines []notes.Line
		loc   *time.Location
		want  string
	}{
		{"owner's zone crosses midnight", []notes.Line{
			{At: time.Date(2026, 11, 29, 22, 30, 0, 0, time.UTC), Role: "user", Text: "Book the train for tomorrow."},
			{At: time.Date(2026, 11, 29, 23, 5, 0, 0, time.UTC), Role: "assistant", Text: "Booked."},
		}, cet, "2026-11-29 23:30 user: Book the train for tomorrow.\n2026-11-30 00:05 assistant: Booked."},
		{"multi-line text indented", []notes.Line{
			{At: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC), Role: "user", Text: "List:\n- eggs \n\n- milk\n"},
		}, nil, "2026-11-30 08:00 user: List:\n  - eggs\n\n  - milk"},
		{"empty text", []notes.Line{{At: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC), Role: "assistant"}},
			time.UTC, "2026-11-30 08:00 assistant:"},
		{"no lines", nil, time.UTC, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := notes.Transcript(tc.lines, tc.loc); got != tc.want {
				t.Errorf("Transcript:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestSummaryPromptDemandsAbsoluteDates(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	transcript := "2026-11-29 23:30 user: see you tomorrow"
	got := notes.SummaryPrompt(transcript, time.Date(2026, 11, 30, 8, 15, 0, 0, time.UTC), cet)

	for _, want := range []string{
		"It is now 2026-11-30 09:15 (CET)",
		"YYYY-MM-DD",
		"language of the conversation",
		"asked", "decided", "pending",
		"<transcript>\n" + transcript + "\n</transcript>",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("prompt lacks %q:\n%s", want, got)
		}
	}
	// The instruction names relative words only as quoted examples of what
	// not to write; outside the quotes and the transcript none may appear.
	instruction, _, _ := strings.Cut(got, "<transcript>")
	unquoted := regexp.MustCompile(`"[^"]*"`).ReplaceAllString(instruction, "")
	relative := regexp.MustCompile(`(?i)\b(today|yesterday|tomorrow|tonight|last week|next week|this morning)\b`)
	if m := relative.FindString(unquoted); m != "" {
		t.Errorf("instruction uses the relative word %q outside the forbidden examples:\n%s", m, instruction)
	}
	if !strings.Contains(instruction, `"yesterday"`) || !strings.Contains(instruction, "Never use") {
		t.Errorf("instruction does not forbid relative words:\n%s", instruction)
	}
}
