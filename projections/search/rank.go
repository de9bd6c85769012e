package search

import (
	"context"
	"fmt"
	"strconv"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/my-agent-crew/crew/events/view"
)

// Passage is a piece of text to rank with Rank: a paragraph of a file.
type Passage = view.Passage

// Ranked is a passage Rank found: its index in the passages given, its
// score and its snippet, marked as Search marks a hit's.
type Ranked = view.Ranked

// Rank ranks passages for text by BM25 the way Search ranks the index —
// the same analysis (English stemming), query (the words, the phrase
// higher, the title a little) and snippets — in a throwaway index in
// memory: for the files as they are now (memory_search, wiki_search read
// them, hand edits included), not the log's fold. Equal scores keep the
// order given. At most limit (10 when 0).
func Rank(ctx context.Context, text string, passages []Passage, limit int) ([]Ranked, error) {
	if limit <= 0 {
		limit = 10
	}
	mem, err := bleve.NewMemOnly(newMapping())
	if err != nil {
		return nil, fmt.Errorf("rank: %w", err)
	}
	defer mem.Close()
	x := &Index{idx: mem}
	b := mem.NewBatch()
	for i, p := range passages {
		// The first passage given is the newest seq: ties rank it first.
		if err := b.Index(strconv.Itoa(i), Doc{Kind: "passage", Text: p.Text, Title: p.Title, Seq: uint64(len(passages) - i), At: "1970-01-01T00:00:00Z"}); err != nil {
			return nil, fmt.Errorf("rank: %w", err)
		}
	}
	if err := mem.Batch(b); err != nil {
		return nil, fmt.Errorf("rank: %w", err)
	}
	hits, err := x.ranked(ctx, query.Query(textQuery(text)), limit)
	if err != nil {
		return nil, err
	}
	hits = x.marked(hits, x.terms(text))
	out := make([]Ranked, 0, len(hits))
	for _, h := range hits {
		i, _ := strconv.Atoi(h.ID)
		out = append(out, Ranked{Index: i, Score: h.Score, Snippet: h.Snippet, Marks: h.Marks})
	}
	return out, nil
}
