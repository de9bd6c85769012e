package memory

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/my-agent-crew/crew/events/view"
)

// Passage is a piece of a memory file a search ranks: a paragraph, or one
// list item (a daily note's line), with the heading that opens it.
type Passage struct {
	Path  string // "memory/2026-11-30.md"
	Line  int    // its first line, from 1
	Title string // a wiki page's name and title; "" for memory
	Text  string
}

// Ranker ranks passages by relevance to query, best first, at most limit,
// each found with its snippet (the text around the first word of the
// query, as recall shows a hit): the server hands in recall's BM25
// (projections/search.Rank).
type Ranker func(ctx context.Context, query string, passages []view.Passage, limit int) ([]view.Ranked, error)

// Option configures Tools.
type Option func(*options)

type options struct{ rank Ranker }

// WithRanker is what memory_search and wiki_search rank with; without
// one they say searching is not available in this process.
func WithRanker(r Ranker) Option { return func(o *options) { o.rank = r } }

// maxHits is how many passages a search returns.
const maxHits = 10

// passages cuts text (the file at path) into the passages a search ranks:
// a blank line ends one, a heading or a list item starts one.
func passages(path, title, text string) []Passage {
	var out []Passage
	var cur []string
	start := 0
	flush := func() {
		if len(cur) > 0 {
			out = append(out, Passage{Path: path, Line: start + 1, Title: title, Text: strings.Join(cur, "\n")})
			cur = nil
		}
	}
	for i, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case t == "":
			flush()
			continue
		case strings.HasPrefix(t, "#") || isItem(t):
			flush()
		}
		if len(cur) == 0 {
			start = i
		}
		cur = append(cur, strings.TrimRight(l, " \t\r"))
	}
	flush()
	return out
}

// isItem reports whether line (trimmed) starts a list item.
func isItem(line string) bool {
	if strings.HasPrefix(line, "- ") || strings.HasPrefix(line, "* ") || strings.HasPrefix(line, "+ ") {
		return true
	}
	i := 0
	for i < len(line) && '0' <= line[i] && line[i] <= '9' {
		i++
	}
	return i > 0 && i+1 < len(line) && (line[i] == '.' || line[i] == ')') && line[i+1] == ' '
}

// rankResult runs rank over ps and writes the hits as recall does, each
// source on a line of its own (file:line, kind) and its snippet below it;
// not fenced: it is the crew's own memory, as wiki_get and the system
// prompt show it (a fenced result would mark the run as having read
// outside content, and every memory write after it).
func rankResult(ctx context.Context, tool string, rank Ranker, query string, ps []Passage) (string, int, error) {
	if rank == nil {
		return "", 0, fmt.Errorf("%s: searching is not available in this process", tool)
	}
	in := make([]view.Passage, len(ps))
	for i, p := range ps {
		in[i] = view.Passage{Title: p.Title, Text: p.Text}
	}
	found, err := rank(ctx, query, in, maxHits)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", tool, err)
	}
	var b strings.Builder
	for i, f := range found {
		if f.Index < 0 || f.Index >= len(ps) {
			return "", 0, fmt.Errorf("%s: the ranking returned passage %d of %d", tool, f.Index, len(ps))
		}
		r := ps[f.Index]
		fmt.Fprintf(&b, "%d. %s:%d", i+1, r.Path, r.Line)
		if r.Title != "" {
			b.WriteString(" — " + r.Title)
		}
		fmt.Fprintf(&b, " (%s)\n", kindOf(r.Path))
		for l := range strings.Lines(f.Snippet) {
			b.WriteString("   " + strings.TrimRight(l, "\n") + "\n")
		}
		// A line written after the run read outside content carries its
		// mark at its end (memory_save): a snippet cut before it still
		// shows it, so the result never passes such a line off as the
		// owner's own (R-X-7).
		for _, mark := range untrustedMark.FindAllString(r.Text, -1) {
			if !strings.Contains(f.Snippet, mark) {
				b.WriteString("   " + mark + "\n")
			}
		}
	}
	return strings.TrimRight(b.String(), "\n"), len(found), nil
}

// untrustedMark is the mark tools.Env.UntrustedMark puts on what a run
// wrote after it read outside content.
var untrustedMark = regexp.MustCompile(`\(from untrusted content, run [^)\s]*\)`)

// kindOf names a passage's file as recall names its documents.
func kindOf(path string) string {
	switch {
	case strings.HasPrefix(path, wikiDir+"/"):
		return "wiki"
	case strings.HasPrefix(path, "memory/"):
		return "note"
	}
	return "memory"
}
