package app

import (
	"context"

	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/projections/search"
	"github.com/my-agent-crew/crew/tools/memory"
)

// openSearch opens serve's recall index beside the projections. An index
// that cannot be opened costs recall, never the server: it says to
// rebuild. The index answers at once from what it has; it catches up
// once the projections have.
func (a *App) openSearch() {
	cfg := search.Config{Dir: search.IndexDir(a.Dir), Log: a.Log(), Start: a.startSeq, After: a.Runner, ReleaseEvery: releaseMappedEvery,
		Logger: a.log.With("component", "search")}
	if e := embedder(a.Home, a.opts.Getenv); e != nil {
		cfg.Embedder, cfg.Usage = a.Ledger.Embedder(e), budget.EmbedCalls(a.Log(), a.Home.Config.Catalog(), cfg.Logger)
	}
	if err := a.recall.Start(cfg); err != nil {
		a.log.Error("recall is off: the search index cannot be opened; stop the server and run crew projections rebuild search", "err", err)
	}
}

// rankPassages is what memory_search and wiki_search rank with: recall's
// BM25 and snippets over the files as they are now (search.Rank).
func rankPassages(ctx context.Context, query string, ps []memory.Passage, limit int) ([]memory.Ranked, error) {
	in := make([]search.Passage, len(ps))
	for i, p := range ps {
		in[i] = search.Passage{Title: p.Title, Text: p.Text}
	}
	found, err := search.Rank(ctx, query, in, limit)
	if err != nil {
		return nil, err
	}
	out := make([]memory.Ranked, 0, len(found))
	for _, r := range found {
		out = append(out, memory.Ranked{Passage: ps[r.Index], Snippet: r.Snippet})
	}
	return out, nil
}
