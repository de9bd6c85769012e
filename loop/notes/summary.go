package notes

import (
	"strings"
	"time"

	"github.com/my-agent-crew/crew/tools/memory"
)

// Line is one message of a conversation to be summarised.
type Line struct {
	At   time.Time
	Role string // "user", "assistant", …
	Text string
}

// Transcript renders lines for SummaryPrompt, one per message:
//
//	2026-11-29 23:30 user: first line
//	  further lines indented by two spaces
//
// Times are in loc (nil meaning UTC), the owner's timezone, so the model
// reads absolute dates and can write them into the summary.
func Transcript(lines []Line, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l.At.In(loc).Format("2006-01-02 15:04") + " " + l.Role + ":")
		for j, t := range strings.Split(memory.Normalize(l.Text), "\n") {
			switch {
			case t == "":
				if j > 0 {
					b.WriteByte('\n')
				}
			case j == 0:
				b.WriteString(" " + t)
			default:
				b.WriteString("\n  " + t)
			}
		}
	}
	return b.String()
}

// SummaryPrompt is the instruction asking a model to summarise transcript
// (from Transcript) at now.
func SummaryPrompt(transcript string, now time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return "Summarise the conversation below so that it can be picked up again later.\n\n" +
		"It is now " + now.In(loc).Format("2006-01-02 15:04") + " (" + loc.String() + "). " +
		"Each transcript line begins with the date and time it was written, in that timezone.\n\n" +
		"Write the summary:\n" +
		"- in the language of the conversation;\n" +
		"- short: a few sentences or a short list, at most about 150 words;\n" +
		"- keeping what the owner asked for, what was decided, and what is still pending (who owes it, by when);\n" +
		"- with absolute dates as YYYY-MM-DD (and HH:MM when the time matters). " +
		`Never use words relative to when it is written, such as "today", "yesterday", "tomorrow", "tonight", "last week" or "next Monday": ` +
		"the summary will be read on another day.\n\n" +
		"Reply with the summary only, without a heading.\n\n" +
		"<transcript>\n" + transcript + "\n</transcript>"
}
