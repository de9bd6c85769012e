package view

import (
	"fmt"
	"strings"
)

// Op is what a diff line does: kept, added or removed.
type Op byte

// Diff operations, shown as the first character of a unified diff line.
const (
	Same Op = ' '
	Add  Op = '+'
	Del  Op = '-'
)

// MarshalText writes an Op as its character, so JSON shows "+", not 43.
func (o Op) MarshalText() ([]byte, error) { return []byte{byte(o)}, nil }

// UnmarshalText reads " ", "+" or "-".
func (o *Op) UnmarshalText(b []byte) error {
	if len(b) != 1 || (b[0] != byte(Same) && b[0] != byte(Add) && b[0] != byte(Del)) {
		return fmt.Errorf("diff op %q: want \" \", \"+\" or \"-\"", b)
	}
	*o = Op(b[0])
	return nil
}

// Line is one line of a diff.
type Line struct {
	Op   Op     `json:"op"`
	Text string `json:"text"`
}

// Diff is the line diff of old and new: the longest common subsequence of
// their lines kept, the rest removed then added. Lines are compared as
// split (see SplitLines): trailing white space and blank lines at the end of
// the file do not count.
func Diff(old, new string) []Line { return DiffLines(SplitLines(old), SplitLines(new)) }

// SplitLines splits a file into lines for comparison: CRLF read as LF, each
// line without trailing white space, blank lines at the end dropped.
func SplitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	out := strings.Split(s, "\n")
	for i, l := range out {
		out[i] = strings.TrimRight(l, " \t\r")
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// maxCells bounds the LCS table (4M cells, 16 MB). MEMORY.md is read into
// every system prompt, so it is far smaller; past the bound the middle is
// shown as all removed, then all added (a change either way).
const maxCells = 4 << 20

// DiffLines is the line diff of two files split by SplitLines.
func DiffLines(a, b []string) []Line {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	out := make([]Line, 0, len(a)+len(b)-pre-suf)
	for _, l := range a[:pre] {
		out = append(out, Line{Same, l})
	}
	out = append(out, lcs(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		out = append(out, Line{Same, l})
	}
	return out
}

// lcs diffs a and b by the classic dynamic programme: t[i][j] is the
// length of the longest common subsequence of a[i:] and b[j:]; walking from
// the top left keeps a common line, else removes (ties) or adds.
func lcs(a, b []string) []Line {
	n, m := len(a), len(b)
	var out []Line
	if n*m > maxCells {
		for _, l := range a {
			out = append(out, Line{Del, l})
		}
		for _, l := range b {
			out = append(out, Line{Add, l})
		}
		return out
	}
	w := m + 1
	t := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i*w+j] = t[(i+1)*w+j+1] + 1
			} else {
				t[i*w+j] = max(t[(i+1)*w+j], t[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, Line{Same, a[i]})
			i, j = i+1, j+1
		case t[(i+1)*w+j] >= t[i*w+j+1]:
			out = append(out, Line{Del, a[i]})
			i++
		default:
			out = append(out, Line{Add, b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, Line{Del, a[i]})
	}
	for ; j < m; j++ {
		out = append(out, Line{Add, b[j]})
	}
	return out
}
