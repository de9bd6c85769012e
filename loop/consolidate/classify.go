package consolidate

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
)

// Classify compares MEMORY.md before (old) and after (new) a rewrite by a
// line diff and names the kind of change (events.Proposal*), with a reason
// a person can read. sources is the text the rewrite was made from (the
// notes read, with their file names): a date in new is sourced when it is
// in sources or in old.
//
//   - unchanged: the same lines (trailing white space and blank lines at
//     the end do not count).
//   - add_only: every old line kept, in order, and lines added.
//   - date_only: the same lines but for date tokens (2026-11-30,
//     30/11/2026, Nov 30 2026, …) changed.
//   - removal: lines only removed.
//   - change: anything else.
//   - unknown_date: an add_only or date_only proposal that brings in a date
//     found neither in sources nor in old.
//
// Only add_only and date_only may be applied without a human (R-MEM-2).
func Classify(old, new, sources string) (kind, reason string) {
	a, b := view.SplitLines(old), view.SplitLines(new)
	var added, removed []string
	for _, l := range view.DiffLines(a, b) {
		switch l.Op {
		case Add:
			added = append(added, l.Text)
		case Del:
			removed = append(removed, l.Text)
		}
	}
	known := knownDates(old + "\n" + sources)
	switch {
	case len(added) == 0 && len(removed) == 0:
		return events.ProposalUnchanged, "no line changes"
	case len(removed) == 0:
		for _, l := range added {
			if d, ok := unsourced(l, known); ok {
				return events.ProposalUnknownDate, fmt.Sprintf("adds %s, with the date %s found neither in the notes read nor in MEMORY.md: %q",
					plural(len(added), "line"), d, l)
			}
		}
		return events.ProposalAddOnly, "adds " + plural(len(added), "line")
	case len(added) == 0:
		return events.ProposalRemoval, "removes " + plural(len(removed), "line")
	}
	if changed, ok := onlyDates(a, b); ok {
		for _, i := range changed {
			if d, ok := unsourced(b[i], known); ok {
				return events.ProposalUnknownDate, fmt.Sprintf("changes a date to %s, found neither in the notes read nor in MEMORY.md: %q", d, b[i])
			}
		}
		return events.ProposalDateOnly, "changes dates on " + plural(len(changed), "line")
	}
	return events.ProposalChange, fmt.Sprintf("removes or rewrites %s and adds %s", plural(len(removed), "line"), plural(len(added), "line"))
}

// AutoApplies reports whether a proposal of kind may be applied without a
// human when its agent is autonomous.
func AutoApplies(kind string) bool {
	return kind == events.ProposalAddOnly || kind == events.ProposalDateOnly
}

// onlyDates reports whether a and b are the same lines but for date
// tokens, and which lines differ.
func onlyDates(a, b []string) (changed []int, ok bool) {
	if len(a) != len(b) {
		return nil, false
	}
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		if maskDates(a[i]) != maskDates(b[i]) {
			return nil, false
		}
		changed = append(changed, i)
	}
	return changed, len(changed) > 0
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// A date token and the calendar days it can mean: "2026-11-30"; two for an
// ambiguous "03/04/2026" (day first, then month first); "????-12-24" for a
// date without a year.
type dateToken struct {
	start, end int
	text       string
	days       []string
}

// monthNames matches a month's name in any case but May, which must be
// capitalised: "may 5 times" is a verb and a count, not a date, and
// reading it as one would let a reworded line pass as date_only.
const monthNames = `(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|(?-i:May)|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?`

var (
	numericDate = regexp.MustCompile(`(\d{1,4})([-/.])(\d{1,2})([-/.])(\d{1,4})`)
	dayMonth    = regexp.MustCompile(`(?i)\b(\d{1,2})(?:st|nd|rd|th)?\s+` + monthNames + `(?:,?\s+(\d{4}))?\b`)
	monthDay    = regexp.MustCompile(`(?i)\b` + monthNames + `\s+(\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(\d{4}))?\b`)
)

// dates finds the date tokens of s, in order, not overlapping.
func dates(s string) []dateToken {
	var out []dateToken
	for _, m := range numericDate.FindAllStringSubmatchIndex(s, -1) {
		if m[0] > 0 && isDigit(s[m[0]-1]) || m[1] < len(s) && isDigit(s[m[1]]) {
			continue // part of a longer number
		}
		g := func(i int) string { return s[m[2*i]:m[2*i+1]] }
		if g(2) != g(4) {
			continue
		}
		var days []string
		switch {
		case len(g(1)) == 4:
			days = appendDay(days, g(1), g(3), g(5))
		case len(g(5)) == 4 && len(g(1)) <= 2:
			days = appendDay(days, g(5), g(3), g(1)) // day first: 30/11/2026
			days = appendDay(days, g(5), g(1), g(3)) // month first: 11/30/2026
		}
		if len(days) > 0 {
			out = append(out, dateToken{m[0], m[1], s[m[0]:m[1]], days})
		}
	}
	for _, m := range dayMonth.FindAllStringSubmatchIndex(s, -1) {
		out = appendNamed(out, s, m, s[m[4]:m[5]], s[m[2]:m[3]], m[6], m[7])
	}
	for _, m := range monthDay.FindAllStringSubmatchIndex(s, -1) {
		out = appendNamed(out, s, m, s[m[2]:m[3]], s[m[4]:m[5]], m[6], m[7])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	kept := out[:0]
	end := 0
	for _, t := range out {
		if t.start >= end {
			kept = append(kept, t)
			end = t.end
		}
	}
	return kept
}

func appendNamed(out []dateToken, s string, m []int, month, day string, ys, ye int) []dateToken {
	mo := monthNumber(month)
	year := "????"
	if ys >= 0 {
		year = s[ys:ye]
	}
	days := appendDay(nil, year, strconv.Itoa(mo), day)
	if len(days) == 0 {
		return out
	}
	return append(out, dateToken{m[0], m[1], s[m[0]:m[1]], days})
}

func monthNumber(name string) int {
	prefix := strings.ToLower(name)[:3]
	for i, p := range []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"} {
		if p == prefix {
			return i + 1
		}
	}
	return 0
}

// appendDay adds "YYYY-MM-DD" when the parts make a real day; year
// "????" stands for a date written without one.
func appendDay(days []string, year, month, day string) []string {
	m, err1 := strconv.Atoi(month)
	d, err2 := strconv.Atoi(day)
	if err1 != nil || err2 != nil || m < 1 || m > 12 || d < 1 {
		return days
	}
	y := 2000 // a leap year, for Feb 29 without a year
	if year != "????" {
		var err error
		if y, err = strconv.Atoi(year); err != nil {
			return days
		}
	}
	if t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC); t.Day() != d {
		return days // Nov 31
	}
	day2 := fmt.Sprintf("%s-%02d-%02d", year, m, d)
	for _, have := range days {
		if have == day2 {
			return days
		}
	}
	return append(days, day2)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// maskDates replaces every date token, so lines that differ only in dates
// compare equal.
func maskDates(s string) string {
	var b strings.Builder
	last := 0
	for _, t := range dates(s) {
		b.WriteString(s[last:t.start])
		b.WriteString("\x00date\x00")
		last = t.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// known is what a text says of dates: the days it names as written
// ("2026-11-30", or "????-12-24" for "Dec 24"), and the month-days of all.
type known struct {
	days, monthDays map[string]bool
}

func knownDates(text string) known {
	k := known{days: map[string]bool{}, monthDays: map[string]bool{}}
	for _, t := range dates(text) {
		for _, d := range t.days {
			k.days[d] = true
			k.monthDays[d[5:]] = true
		}
	}
	return k
}

// sourced: a dated day is sourced by itself, or by its month-day written
// without a year (the notes of a 2026 file saying "Dec 24"); a day without
// a year by any mention of its month-day.
func (k known) sourced(day string) bool {
	if strings.HasPrefix(day, "????") {
		return k.monthDays[day[5:]]
	}
	return k.days[day] || k.days["????"+day[4:]]
}

// unsourced returns the first date of line that k holds in none of its
// readings.
func unsourced(line string, k known) (string, bool) {
	for _, t := range dates(line) {
		ok := false
		for _, d := range t.days {
			ok = ok || k.sourced(d)
		}
		if !ok {
			return t.text, true
		}
	}
	return "", false
}
