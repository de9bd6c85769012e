package search

import (
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/projections"
)

// Recall is the index as the recall tools (tools/recall.Index) and the
// turn notes (notes.Earlier) search it, under the reach rules of each
// seat (ReachOf; master is the seat that reaches everything). It is
// built with the crew, before any index is open: until Start has opened
// one, and in commands that open none, the tools say recall is not
// available and the notes tell nothing.
type Recall struct {
	master string
	open   atomic.Pointer[served]
}

// served is an open index with its feeder and the goroutines beside it.
type served struct {
	x      *Index
	f      *Feeder
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewRecall is a Recall with no index open yet.
func NewRecall(master string) *Recall { return &Recall{master: master} }

// Config is how serve opens its recall index.
type Config struct {
	Dir string // IndexDir of the home
	Log *events.Log
	// Embedder ranks by meaning too (nil: by words alone); Usage records
	// each of its requests.
	Embedder Embedder
	Usage    EmbedUsage
	// Start is the log's last sequence at start. The catch-up begins
	// once After (the projections; nil: nothing) holds it — two catch-ups
	// at once held both their memory (docs/performance.md, "Memory") —
	// and once the index holds it too, the heap each catch-up grew goes
	// back to the system.
	Start uint64
	After projections.Freshness
	// ReleaseEvery is how often the segment pages queries touched are
	// handed back to the kernel (ReleaseMapped; 0: never).
	ReleaseEvery time.Duration
	// CatchUpGC, when set, is the collector's percent (GOGC) from Start
	// until the index holds cfg.Start (the projections' catch-up, then
	// the index's), then the runtime's again: a catch-up's heap is
	// mostly garbage between collections, which the default 100 lets
	// grow to the live heap's size again. A GOGC of the owner's (not
	// 100) is left alone.
	CatchUpGC int
	Logger    *slog.Logger
}

// CatchUpGC is serve's Config.CatchUpGC: 50 held the million-event
// catch-ups' anonymous peak 35-40 MB lower for about a third more CPU
// (docs/performance.md, "Memory").
const CatchUpGC = 50

// ErrNotOpen is what the recall tools are told when no index is open.
var ErrNotOpen = errors.New("the search index is not open in this process")

// Serve is Start for serve: an index that cannot be opened costs recall,
// never the server. It is logged at error with what to do, and recall
// stays off (the tools say so, ErrNotOpen).
func (r *Recall) Serve(cfg Config) {
	if err := r.Start(cfg); err != nil {
		cfg.Logger.Error("recall is off: the search index cannot be opened; stop the server and run crew projections rebuild search", "err", err)
	}
}

// Start opens the index at cfg.Dir (an older build's is started again
// empty) and catches it up with cfg.Log in the background: recall
// answers at once from what the index has. Close stops it.
func (r *Recall) Start(cfg Config) error {
	x, err := Open(cfg.Dir)
	if err != nil {
		return err
	}
	if x.Reset() {
		cfg.Logger.Info("the search index was written by an older build: indexing the log again in the background")
	}
	if cfg.Embedder != nil {
		if err := x.EnableEmbeddings(cfg.Embedder, cfg.Usage, cfg.Logger); err != nil {
			x.Close()
			return err
		}
	}
	after := func(ctx context.Context) error {
		if cfg.After == nil {
			return nil
		}
		err := cfg.After.WaitFor(ctx, cfg.Start)
		if err == nil {
			debug.FreeOSMemory()
		}
		return err
	}
	f, err := StartAfter(x, cfg.Log, cfg.Log.Redactor(), cfg.Logger, after)
	if err != nil {
		x.Close()
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{x: x, f: f, cancel: cancel}
	if cfg.ReleaseEvery > 0 {
		s.wg.Go(func() { x.ReleaseMappedEvery(ctx, cfg.ReleaseEvery) })
	}
	gc := 100
	if cfg.CatchUpGC > 0 {
		if gc = debug.SetGCPercent(cfg.CatchUpGC); gc != 100 {
			debug.SetGCPercent(gc) // the owner's GOGC
		}
	}
	s.wg.Go(func() {
		err := f.WaitFor(ctx, cfg.Start)
		if gc == 100 && cfg.CatchUpGC > 0 {
			debug.SetGCPercent(gc)
		}
		if err == nil {
			debug.FreeOSMemory()
		}
	})
	if old := r.open.Swap(s); old != nil {
		old.close()
	}
	return nil
}

// Close stops the feeder and closes the index; recall is not available
// after it.
func (r *Recall) Close() {
	if s := r.open.Swap(nil); s != nil {
		s.close()
	}
}

func (s *served) close() {
	s.cancel()
	s.wg.Wait()
	s.f.Close()
	s.x.Close()
}

// Index is the open index (nil: none).
func (r *Recall) Index() *Index {
	if s := r.served(); s != nil {
		return s.x
	}
	return nil
}

func (r *Recall) served() *served {
	if r == nil {
		return nil
	}
	return r.open.Load()
}

// Recall searches what the seat of agent in conv reaches.
func (r *Recall) Recall(ctx context.Context, agent, conv string, q view.RecallQuery) ([]view.RecallHit, error) {
	x := r.Index()
	if x == nil {
		return nil, ErrNotOpen
	}
	sq := Query{Text: q.Text, Since: q.Since, Agent: q.Agent, Limit: q.Limit, Reach: x.ReachOf(r.master, agent, conv)}
	if q.Scope != "" && q.Scope != "all" {
		sq.Kinds = Scopes[q.Scope]
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
// the top hits that clear Related's threshold among what the agent's
// seat reaches, none of the conversation itself. Without an open index,
// nothing.
func (r *Recall) Earlier(ctx context.Context, agent, conv, text string) ([]view.RecallHit, error) {
	x := r.Index()
	if x == nil {
		return nil, nil
	}
	hits, err := x.Related(ctx, Query{Text: text, Reach: x.ReachOf(r.master, agent, conv)}, earlierHits, conv)
	if err != nil {
		return nil, err
	}
	return recallHits(hits), nil
}

// Open is the text around the hit ref ("<subject>@<seq>", a hit's Ref)
// names, for recall_open; ok false when the seat reaches none.
func (r *Recall) Open(ctx context.Context, agent, conv, ref string) (string, bool, error) {
	x := r.Index()
	if x == nil {
		return "", false, ErrNotOpen
	}
	subject, seqText, ok := strings.Cut(ref, "@")
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if !ok || err != nil {
		return "", false, nil
	}
	reach := x.ReachOf(r.master, agent, conv)
	h, ok, err := x.BySource(ctx, subject, seq, reach)
	if err != nil || !ok {
		return "", false, err
	}
	return x.Around(ctx, h, reach)
}

func recallHits(hits []Hit) []view.RecallHit {
	out := make([]view.RecallHit, 0, len(hits))
	for _, h := range hits {
		out = append(out, view.RecallHit{Kind: h.Kind, Source: h.Source(), Link: h.Link(), Ref: h.Ref(), Snippet: h.Snippet})
	}
	return out
}

// Health is the recall index's line of /healthz details.
type Health struct {
	FeederStatus
	// Lag is how many events of the log the index has not applied yet.
	Lag uint64 `json:"lag"`
}

// Health is the index's progress beside the projections' statuses (each
// LastSeq the log's last on its filter); ok false when none is open.
func (r *Recall) Health(ps []projections.Status) (h Health, ok bool) {
	s := r.served()
	if s == nil {
		return Health{}, false
	}
	return healthOf(s.f.Status(), ps), true
}

func healthOf(st FeederStatus, ps []projections.Status) Health {
	h := Health{FeederStatus: st}
	for _, p := range ps {
		if p.LastSeq > st.Checkpoint {
			h.Lag = max(h.Lag, p.LastSeq-st.Checkpoint)
		}
	}
	return h
}
