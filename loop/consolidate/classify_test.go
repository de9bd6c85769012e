package consolidate

import (
	"slices"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
)

// R-MEM-2: an autonomous agent auto-applies only a proposal that only adds
// lines or only changes dates (to dates the notes give); code comparing old
// and new decides, not the model.
func TestAutoApplyOnlyAddOnlyOrDateOnly(t *testing.T) {
	const old = "# Memory\n\n- Owner runs 10k on Sundays.\n- Dentist on 2026-12-03.\n"
	const notes = "## memory/2026-11-30.md\n\nDentist moved to 2026-12-05. Race on 14/12/2026.\n"
	tests := []struct {
		name     string
		old, new string
		sources  string
		kind     string
		auto     bool
		reason   string // a part of the reason
	}{
		{name: "add-only", old: old, new: old + "- Prefers oat milk.\n- Race on 2026-12-14.\n", sources: notes,
			kind: events.ProposalAddOnly, auto: true, reason: "adds 2 lines"},
		{name: "date-only", old: old, new: strings.Replace(old, "2026-12-03", "2026-12-05", 1), sources: notes,
			kind: events.ProposalDateOnly, auto: true, reason: "changes dates on 1 line"},
		{name: "date-only in another format", old: "- Race on 2026-12-01.\n", new: "- Race on 14/12/2026.\n", sources: notes,
			kind: events.ProposalDateOnly, auto: true},
		{name: "removal", old: old, new: "# Memory\n\n- Owner runs 10k on Sundays.\n", sources: notes,
			kind: events.ProposalRemoval, reason: "removes 1 line"},
		{name: "change", old: old, new: strings.Replace(old, "10k", "5k", 1), sources: notes,
			kind: events.ProposalChange, reason: "removes or rewrites 1 line and adds 1 line"},
		{name: "change and add", old: old, new: strings.Replace(old, "Sundays", "Saturdays", 1) + "- New fact.\n", sources: notes,
			kind: events.ProposalChange},
		{name: "date and text changed on one line", old: old, new: strings.Replace(old, "Dentist on 2026-12-03", "Doctor on 2026-12-05", 1), sources: notes,
			kind: events.ProposalChange},
		{name: "unknown date source", old: old, new: strings.Replace(old, "2026-12-03", "2026-12-24", 1), sources: notes,
			kind: events.ProposalUnknownDate, reason: "2026-12-24"},
		{name: "added line with unsourced date", old: old, new: old + "- Party on 2026-12-31.\n", sources: notes,
			kind: events.ProposalUnknownDate, reason: "2026-12-31"},
		{name: "added line with unsourced month-name date", old: old, new: old + "- Party on Dec 31.\n", sources: notes,
			kind: events.ProposalUnknownDate, reason: "Dec 31"},
		{name: "added line dated by the notes' file name", old: old, new: old + "- 2026-11-30: moved the dentist.\n", sources: notes,
			kind: events.ProposalAddOnly, auto: true},
		{name: "added line with a date already in old", old: old, new: old + "- Bring the x-ray on 2026-12-03.\n", sources: "",
			kind: events.ProposalAddOnly, auto: true},
		{name: "unchanged", old: old, new: old, sources: notes,
			kind: events.ProposalUnchanged},
		{name: "whitespace-only trailing newline", old: strings.TrimSuffix(old, "\n"), new: old + "\n\n", sources: notes,
			kind: events.ProposalUnchanged},
		{name: "CRLF and trailing spaces", old: old, new: strings.ReplaceAll(old, "\n", "  \r\n"), sources: notes,
			kind: events.ProposalUnchanged},
		{name: "from empty", old: "", new: "# Memory\n\n- Likes tea.\n", sources: notes,
			kind: events.ProposalAddOnly, auto: true},
		{name: "to empty", old: old, new: "", sources: notes,
			kind: events.ProposalRemoval, reason: "removes 4 lines"},
		{name: "reordered", old: "- a\n- b\n", new: "- b\n- a\n", sources: notes,
			kind: events.ProposalChange},
		// "may 3" is a verb and a count: rewording it is a change, even in
		// a week whose notes name May 5.
		{name: "may is not a month", old: "- Runs may 3 times a week at most.\n", new: "- Runs may 5 times a week at most.\n",
			sources: "## memory/2026-05-05.md\n\n- ran\n", kind: events.ProposalChange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, reason := Classify(tt.old, tt.new, tt.sources)
			if kind != tt.kind {
				t.Errorf("kind = %s (%s), want %s", kind, reason, tt.kind)
			}
			if got := AutoApplies(kind); got != tt.auto {
				t.Errorf("AutoApplies(%s) = %v, want %v", kind, got, tt.auto)
			}
			if !strings.Contains(reason, tt.reason) {
				t.Errorf("reason = %q, want it to contain %q", reason, tt.reason)
			}
		})
	}
}

func TestDates(t *testing.T) {
	tests := []struct {
		in   string
		want []string // days of every token, in order
	}{
		{"on 2026-11-30.", []string{"2026-11-30"}},
		{"at 2026-11-30T08:00Z", []string{"2026-11-30"}},
		{"30/11/2026 and 11/30/2026", []string{"2026-11-30", "2026-11-30"}},
		{"03/04/2026", []string{"2026-04-03", "2026-03-04"}},
		{"30.11.2026", []string{"2026-11-30"}},
		{"Nov 30, 2026; 1st December 2026; dec 24", []string{"2026-11-30", "2026-12-01", "????-12-24"}},
		{"version 1.2.3, phone 12-34-5678, 2026-13-01, 2026-02-30, 123/11/2026", nil},
		{"memory/2026-11-29.md", []string{"2026-11-29"}},
		{"May 5, 2026; 5 May; may 5 times", []string{"2026-05-05", "????-05-05"}},
	}
	for _, tt := range tests {
		var got []string
		for _, d := range dates(tt.in) {
			got = append(got, d.days...)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("dates(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
