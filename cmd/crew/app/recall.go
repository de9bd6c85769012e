package app

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/projections/search"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/memory"
	"github.com/my-agent-crew/crew/tools/recall"
)

// recallIndex is the search projection as the recall tools see it: set
// once serve has opened the index (until then, and in commands that open
// none, the tools say recall is not available).
type recallIndex struct {
	x      atomic.Pointer[search.Index]
	master string
}

var _ recall.Index = (*recallIndex)(nil)

func (r *recallIndex) index() *search.Index {
	if r == nil {
		return nil
	}
	return r.x.Load()
}

func (r *recallIndex) Recall(ctx context.Context, env tools.Env, q recall.Query) ([]recall.Hit, error) {
	x := r.index()
	if x == nil {
		return nil, fmt.Errorf("the search index is not open in this process")
	}
	sq := search.Query{Text: q.Text, Since: q.Since, Agent: q.Agent, Limit: q.Limit, Reach: x.ReachOf(r.master, env.AgentID, env.Conversation)}
	if q.Scope != "" && q.Scope != "all" {
		sq.Kinds = search.Scopes[q.Scope]
	}
	hits, err := x.Search(ctx, sq)
	if err != nil {
		return nil, err
	}
	return recallHits(hits), nil
}

// earlierHits is how many hits the "earlier, on this topic" note tells.
const earlierHits = 3

// Earlier is what the turn notes tell of a conversation's first message:
// the top hits that clear search.Related's threshold among what the
// agent's seat reaches, none of the conversation itself. Without an open
// index, nothing.
func (r *recallIndex) Earlier(ctx context.Context, agent, conv, text string) ([]recall.Hit, error) {
	x := r.index()
	if x == nil {
		return nil, nil
	}
	hits, err := x.Related(ctx, search.Query{Text: text, Reach: x.ReachOf(r.master, agent, conv)}, earlierHits, conv)
	if err != nil {
		return nil, err
	}
	return recallHits(hits), nil
}

func recallHits(hits []search.Hit) []recall.Hit {
	out := make([]recall.Hit, 0, len(hits))
	for _, h := range hits {
		out = append(out, recall.Hit{Kind: h.Kind, Source: h.Source(), Link: h.Link(), Ref: h.Ref(), Snippet: h.Snippet})
	}
	return out
}

func (r *recallIndex) Open(ctx context.Context, env tools.Env, ref string) (string, bool, error) {
	x := r.index()
	if x == nil {
		return "", false, fmt.Errorf("the search index is not open in this process")
	}
	subject, seqText, ok := strings.Cut(ref, "@")
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if !ok || err != nil {
		return "", false, nil
	}
	reach := x.ReachOf(r.master, env.AgentID, env.Conversation)
	h, ok, err := x.BySource(ctx, subject, seq, reach)
	if err != nil || !ok {
		return "", false, err
	}
	return x.Around(ctx, h, reach)
}

// openRecall opens the search index of the home and starts catching it
// up in the background (with embeddings when config.yaml names a route);
// the caller closes what it returns.
func openRecall(dir string, h *home.Home, log *events.Log, ledger *budget.Ledger, getenv func(string) string, logger *slog.Logger, after func(context.Context) error) (*search.Index, *search.Feeder, func(), error) {
	x, err := search.Open(search.IndexDir(dir))
	if err != nil {
		return nil, nil, nil, err
	}
	if x.Reset() {
		logger.Info("the search index was written by an older build: indexing the log again in the background")
	}
	if he := embedder(h, getenv); he != nil {
		var e search.Embedder = he
		if ledger != nil {
			e = ledger.Embedder(he)
		}
		if err := x.EnableEmbeddings(e, budget.EmbedCalls(log, h.Config.Catalog(), logger), logger); err != nil {
			x.Close()
			return nil, nil, nil, err
		}
	}
	f, err := search.StartAfter(x, log, log.Redactor(), logger, after)
	if err != nil {
		x.Close()
		return nil, nil, nil, err
	}
	return x, f, func() { f.Close(); x.Close() }, nil
}

// openSearch opens serve's recall index beside the projections. An index
// that cannot be opened costs recall, never the server: it says to
// rebuild. The index answers at once from what it has; it catches up
// once the projections have (two catch-ups at once held both their
// memory: docs/performance.md, "Memory"), and each catch-up's end hands
// the heap it grew back to the system.
func (a *App) openSearch(ctx context.Context) {
	after := func(ctx context.Context) error {
		err := a.Runner.WaitFor(ctx, a.startSeq)
		if err == nil {
			debug.FreeOSMemory()
		}
		return err
	}
	x, f, closeX, err := openRecall(a.Dir, a.Home, a.Log(), a.Ledger, a.opts.Getenv, a.log.With("component", "search"), after)
	if err != nil {
		a.log.Error("recall is off: the search index cannot be opened; stop the server and run crew projections rebuild search", "err", err)
		return
	}
	a.Search, a.searchFeeder, a.closeSearch = x, f, closeX
	a.wiring.recall.x.Store(x)
	go x.ReleaseMappedEvery(ctx, releaseMappedEvery) // as projections.db's (docs/performance.md, "Memory")
	go func() {
		if f.WaitFor(ctx, a.startSeq) == nil {
			debug.FreeOSMemory()
		}
	}()
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
