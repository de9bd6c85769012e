package search

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
)

// Query is one search.
type Query struct {
	Text  string
	Kinds []string  // none: every kind
	Since time.Time // zero: all time
	Agent string    // only this agent's documents
	// Reach limits the documents to those whose reach holds one of these
	// ("all", "agent:<id>", "conv:<id>"); nil is everything (the owner,
	// the master).
	Reach []string
	Limit int // 10 when 0
}

// Hit is one document found, with its source.
type Hit struct {
	ID           string    `json:"id"`
	Kind         string    `json:"kind"`
	Score        float64   `json:"score"`
	Subject      string    `json:"subject"`
	Seq          uint64    `json:"seq"`
	Conversation string    `json:"conversation,omitempty"`
	Run          string    `json:"run,omitempty"`
	Step         int       `json:"step,omitempty"`
	Agent        string    `json:"agent,omitempty"`
	Channel      string    `json:"channel,omitempty"`
	Day          string    `json:"day,omitempty"`
	At           time.Time `json:"at"`
	Title        string    `json:"title,omitempty"`
	Path         string    `json:"path,omitempty"`
	Canvas       string    `json:"canvas,omitempty"`
	Version      int       `json:"version,omitempty"`
	// Snippet is the text around the first match; Marks are the matched
	// byte ranges within it.
	Snippet string   `json:"snippet"`
	Marks   [][2]int `json:"marks,omitempty"`
	// Text is the document's whole text.
	Text string `json:"-"`
}

// Source names where a hit came from, for a model:
// "conversation web-20261014 · 2026-10-14 · step 3".
func (h Hit) Source() string {
	switch h.Kind {
	case KindMessage, KindReply, KindSummary:
		s := "conversation " + h.Conversation + " · " + h.Day
		if h.Step > 0 {
			s += fmt.Sprintf(" · step %d", h.Step)
		}
		return s
	case KindCanvas, KindCanvasV:
		return fmt.Sprintf("canvas %s · v%d · %s", h.Canvas, h.Version, h.Day)
	default:
		s := h.Path
		if h.Agent != "" && (h.Kind == KindNote || h.Kind == KindMemory) {
			s = "agent " + h.Agent + " · " + s
		}
		return s + " · " + h.Day
	}
}

// Link is the path that opens the hit: a conversation at its message, a
// run step, a memory page, a canvas version.
func (h Hit) Link() string {
	switch h.Kind {
	case KindMessage, KindReply:
		return "/c/" + url.PathEscape(h.Conversation) + "?hit=" + url.QueryEscape(h.ID) + "#hit"
	case KindSummary:
		return "/c/" + url.PathEscape(h.Conversation)
	case KindCanvas, KindCanvasV:
		return fmt.Sprintf("/canvases/%s?v=%d", url.PathEscape(h.Canvas), h.Version)
	case KindNote, KindMemory, KindFact, KindWiki:
		return "/memory"
	}
	return "/"
}

// Ref is the hit's source as recall_open takes it: "<subject>@<seq>".
func (h Hit) Ref() string { return fmt.Sprintf("%s@%d", h.Subject, h.Seq) }

// fields the hits load.
var hitFields = []string{"kind", "text", "title", "subject", "seq", "conv", "run", "step", "agent", "channel", "day", "at", "path", "canvas", "version"}

// filter is the part of a query that says which documents may match.
func (q Query) filter() []query.Query {
	var out []query.Query
	term := func(field, v string) query.Query {
		t := bleve.NewTermQuery(v)
		t.SetField(field)
		return t
	}
	if len(q.Kinds) > 0 {
		var ds []query.Query
		for _, k := range q.Kinds {
			ds = append(ds, term("kind", k))
		}
		out = append(out, bleve.NewDisjunctionQuery(ds...))
	}
	if q.Reach != nil {
		ds := []query.Query{term("reach", "all")}
		for _, r := range q.Reach {
			ds = append(ds, term("reach", r))
		}
		out = append(out, bleve.NewDisjunctionQuery(ds...))
	}
	if q.Agent != "" {
		out = append(out, term("agent", q.Agent))
	}
	if !q.Since.IsZero() {
		r := bleve.NewDateRangeQuery(q.Since, time.Time{})
		r.SetField("at")
		out = append(out, r)
	}
	return out
}

// textQuery matches the words (any of them, BM25), the phrase ranking
// higher, and titles a little.
func textQuery(text string) query.Query {
	words := bleve.NewMatchQuery(text)
	words.SetField("text")
	phrase := bleve.NewMatchPhraseQuery(text)
	phrase.SetField("text")
	phrase.SetBoost(2)
	title := bleve.NewMatchQuery(text)
	title.SetField("title")
	title.SetBoost(0.5)
	return bleve.NewDisjunctionQuery(words, phrase, title)
}

// Search runs q: BM25, fused with cosine when the index has vectors.
func (x *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	if strings.TrimSpace(q.Text) == "" {
		return nil, nil
	}
	limit := cmp.Or(q.Limit, 10)
	terms := x.terms(q.Text)
	if x.vec == nil || !x.vec.ready() {
		hits, err := x.bm25(ctx, q, limit)
		return x.marked(hits, terms), err
	}
	bm, err := x.bm25(ctx, q, max(limit, fuseDepth))
	if err != nil {
		return nil, err
	}
	near, err := x.vec.nearest(ctx, q.Text, fuseDepth*4)
	if err != nil {
		// Meaning is a bonus: words still answer.
		return x.marked(cut(bm, limit), terms), nil
	}
	hits, err := x.fuse(ctx, q, bm, near, limit)
	return x.marked(hits, terms), err
}

func cut(hits []Hit, n int) []Hit {
	if len(hits) > n {
		return hits[:n]
	}
	return hits
}

// fuseDepth is how many hits of each ranking reciprocal-rank fusion reads.
const fuseDepth = 50

// rrfK is the fusion's constant (the usual 60).
const rrfK = 60

func (x *Index) bm25(ctx context.Context, q Query, size int) ([]Hit, error) {
	qs := append([]query.Query{textQuery(q.Text)}, q.filter()...)
	return x.ranked(ctx, bleve.NewConjunctionQuery(qs...), size)
}

// ranked returns the top size hits of qq by score, equal scores newest
// (highest seq) first, then by id: the same order whatever the layout of
// the index's segments, so a rebuilt index answers as the live one.
//
// It asks bleve for one hit more than size sorted by score alone (its
// fast path: no field is read for the documents that do not make the
// cut) and orders ties itself. Only when the last hit kept ties with the
// first left out, which ones make the cut is decided by seq and id over
// every tied document: then the query runs again sorted by all three.
func (x *Index) ranked(ctx context.Context, qq query.Query, size int) ([]Hit, error) {
	req := bleve.NewSearchRequestOptions(qq, size+1, 0, false)
	req.Fields = hitFields
	res, err := x.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if len(res.Hits) > size && res.Hits[size-1].Score == res.Hits[size].Score {
		return x.run(ctx, qq, size)
	}
	hits := make([]Hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		hits = append(hits, toHit(h))
	}
	slices.SortFunc(hits, byRank)
	return cut(hits, size), nil
}

// byRank orders hits as the index ranks them: score, then newest, then id.
func byRank(a, b Hit) int {
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Seq, a.Seq); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// run returns the top size hits of qq sorted in full by score and seq.
func (x *Index) run(ctx context.Context, qq query.Query, size int) ([]Hit, error) {
	req := bleve.NewSearchRequestOptions(qq, size, 0, false)
	req.Fields = hitFields
	// No two documents share a seq (each comes from its own event), so
	// seq breaks every tie; the id is only read for the few kept.
	req.SortBy([]string{"-_score", "-seq"})
	res, err := x.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	hits := make([]Hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		hits = append(hits, toHit(h))
	}
	slices.SortFunc(hits, byRank)
	return hits, nil
}

// fuse ranks by reciprocal-rank fusion of the BM25 hits and the nearest
// vectors that the query's filter lets through.
func (x *Index) fuse(ctx context.Context, q Query, bm []Hit, near []string, limit int) ([]Hit, error) {
	var vecHits []Hit
	if len(near) > 0 {
		qs := append([]query.Query{bleve.NewDocIDQuery(near)}, q.filter()...)
		got, err := x.run(ctx, bleve.NewConjunctionQuery(qs...), len(near))
		if err != nil {
			return nil, err
		}
		byID := map[string]Hit{}
		for _, h := range got {
			byID[h.ID] = h
		}
		for _, id := range near {
			if h, ok := byID[id]; ok {
				vecHits = append(vecHits, h)
			}
		}
		vecHits = cut(vecHits, fuseDepth)
	}
	score := map[string]float64{}
	hit := map[string]Hit{}
	for rank, h := range bm {
		score[h.ID] += 1 / float64(rrfK+rank+1)
		hit[h.ID] = h
	}
	for rank, h := range vecHits {
		score[h.ID] += 1 / float64(rrfK+rank+1)
		if _, ok := hit[h.ID]; !ok {
			hit[h.ID] = h
		}
	}
	out := make([]Hit, 0, len(hit))
	for id, h := range hit {
		h.Score = score[id]
		out = append(out, h)
	}
	slices.SortFunc(out, byRank)
	return cut(out, limit), nil
}

// terms are the words of text as the index analyses them (stemmed, stop
// words out): what a hit's marks are matched against.
func (x *Index) terms(text string) map[string]bool {
	a := x.idx.Mapping().AnalyzerNamed(en.AnalyzerName)
	out := map[string]bool{}
	if a == nil {
		return out
	}
	for _, t := range a.Analyze([]byte(text)) {
		out[string(t.Term)] = true
	}
	return out
}

// marked gives each hit its snippet: the text around its first word of
// the query, the words marked. The index keeps no match locations for a
// query (reading them for every matching document was the larger part of
// a query's cost); the few hits shown are analysed again instead.
func (x *Index) marked(hits []Hit, terms map[string]bool) []Hit {
	a := x.idx.Mapping().AnalyzerNamed(en.AnalyzerName)
	for i := range hits {
		var locs [][2]int
		if a != nil && len(terms) > 0 {
			for _, t := range a.Analyze([]byte(hits[i].Text)) {
				if terms[string(t.Term)] {
					locs = append(locs, [2]int{t.Start, t.End})
				}
			}
		}
		hits[i].Snippet, hits[i].Marks = snippet(hits[i].Text, locs)
	}
	return hits
}

func toHit(h *search.DocumentMatch) Hit {
	str := func(f string) string { s, _ := h.Fields[f].(string); return s }
	num := func(f string) float64 { n, _ := h.Fields[f].(float64); return n }
	out := Hit{ID: h.ID, Kind: str("kind"), Score: h.Score, Subject: str("subject"), Seq: uint64(num("seq")),
		Conversation: str("conv"), Run: str("run"), Step: int(num("step")), Agent: str("agent"), Channel: str("channel"),
		Day: str("day"), Title: str("title"), Path: str("path"), Canvas: str("canvas"), Version: int(num("version")), Text: str("text")}
	out.At, _ = time.Parse(time.RFC3339Nano, str("at"))
	return out
}

// snippetWidth is about how many bytes of text a snippet shows.
const snippetWidth = 280

// snippet cuts text around its first match and returns the matches inside
// the cut, relative to it.
func snippet(text string, locs [][2]int) (string, [][2]int) {
	slices.SortFunc(locs, func(a, b [2]int) int { return cmp.Compare(a[0], b[0]) })
	locs = slices.Compact(locs)
	start, end := 0, len(text)
	if len(text) > snippetWidth {
		if len(locs) > 0 {
			start = max(0, locs[0][0]-snippetWidth/3)
		}
		end = min(len(text), start+snippetWidth)
		start = max(0, min(start, end-snippetWidth))
		for start > 0 && !utf8.RuneStart(text[start]) {
			start++
		}
		for end < len(text) && !utf8.RuneStart(text[end]) {
			end--
		}
		if i := strings.IndexAny(text[start:min(end, start+30)], " \n"); start > 0 && i >= 0 {
			start += i + 1
		}
		if i := strings.LastIndexAny(text[max(start, end-30):end], " \n"); end < len(text) && i >= 0 {
			end = max(start, end-30) + i
		}
	}
	var marks [][2]int
	for _, l := range locs {
		if l[0] >= start && l[1] <= end && l[0] < l[1] {
			marks = append(marks, [2]int{l[0] - start, l[1] - start})
		}
	}
	s := text[start:end]
	prefix := ""
	if start > 0 {
		prefix = "…"
	}
	if end < len(text) {
		s += "…"
	}
	if prefix != "" {
		for i := range marks {
			marks[i][0] += len(prefix)
			marks[i][1] += len(prefix)
		}
	}
	return prefix + s, marks
}

// Get returns the document id, for recall_open.
func (x *Index) Get(ctx context.Context, id string, reach []string) (Hit, bool, error) {
	qs := append([]query.Query{bleve.NewDocIDQuery([]string{id})}, Query{Reach: reach}.filter()...)
	hits, err := x.run(ctx, bleve.NewConjunctionQuery(qs...), 1)
	if err != nil || len(hits) == 0 {
		return Hit{}, false, err
	}
	return hits[0], true, nil
}

// BySource finds the document stored from the event at subject and seq,
// among those reach lets through.
func (x *Index) BySource(ctx context.Context, subject string, seq uint64, reach []string) (Hit, bool, error) {
	t := bleve.NewTermQuery(subject)
	t.SetField("subject")
	f := float64(seq)
	incl := true
	n := bleve.NewNumericRangeInclusiveQuery(&f, &f, &incl, &incl)
	n.SetField("seq")
	qs := append([]query.Query{t, n}, Query{Reach: reach}.filter()...)
	hits, err := x.run(ctx, bleve.NewConjunctionQuery(qs...), 1)
	if err != nil || len(hits) == 0 {
		return Hit{}, false, err
	}
	return hits[0], true, nil
}

// Conversation returns what the index knows of a conversation: its agent
// and root (delegation root or team lead), for the reach rules.
func (x *Index) Conversation(id string) (agent, root string, ok bool) {
	b := x.newBatch(nil)
	var m convMeta
	found, err := b.get(prefixConv+id, &m)
	if err != nil || !found {
		return "", "", false
	}
	return m.Agent, m.Root, true
}

// ReachOf is what an agent in a conversation may recall, by its seat:
// the master everything (nil); another agent its own documents (its
// conversations, notes and MEMORY.md), its conversation's, its root
// conversation's (a delegated child's chain, a teammate's team lead) and
// the shared ones (the wiki, the owner's facts); canvases as the canvas
// reach rules say (their author, the conversations linked to them).
func (x *Index) ReachOf(master, agent, conv string) []string {
	if master != "" && agent == master {
		return nil
	}
	reach := []string{"agent:" + agent}
	if conv != "" {
		reach = append(reach, "conv:"+conv)
		if _, root, ok := x.Conversation(conv); ok && root != "" {
			reach = append(reach, "conv:"+root)
		}
	}
	return reach
}

// aroundN is how many documents of a conversation Around shows on each
// side of the hit.
const aroundN = 3

// Around is the text around hit h for recall_open: a conversation's
// messages and replies before and after it, each with its source; for
// the other kinds the whole text.
func (x *Index) Around(ctx context.Context, h Hit, reach []string) (string, bool, error) {
	if h.Conversation == "" || (h.Kind != KindMessage && h.Kind != KindReply) {
		return h.Source() + "\n\n" + h.Text, true, nil
	}
	t := bleve.NewTermQuery(h.Conversation)
	t.SetField("conv")
	lo, hi := float64(0), float64(h.Seq)
	incl := true
	before := bleve.NewNumericRangeInclusiveQuery(&lo, &hi, &incl, &incl)
	before.SetField("seq")
	kinds := Query{Kinds: []string{KindMessage, KindReply}, Reach: reach}.filter()
	get := func(r query.Query, sort string, n int) ([]Hit, error) {
		req := bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(append([]query.Query{t, r}, kinds...)...), n, 0, false)
		req.Fields = hitFields
		req.SortBy([]string{sort})
		res, err := x.idx.SearchInContext(ctx, req)
		if err != nil {
			return nil, err
		}
		var out []Hit
		for _, m := range res.Hits {
			out = append(out, toHit(m))
		}
		return out, nil
	}
	prev, err := get(before, "-seq", aroundN+1)
	if err != nil {
		return "", false, err
	}
	after := bleve.NewNumericRangeInclusiveQuery(&hi, nil, new(bool), nil)
	after.SetField("seq")
	next, err := get(after, "seq", aroundN)
	if err != nil {
		return "", false, err
	}
	slices.Reverse(prev)
	var b strings.Builder
	for _, d := range append(prev, next...) {
		who := "owner"
		if d.Kind == KindReply {
			who = d.Agent
		}
		mark := ""
		if d.Seq == h.Seq {
			mark = " ← the hit"
		}
		fmt.Fprintf(&b, "[%s · %s · seq %d%s]\n%s\n\n", who, d.At.Format("2006-01-02 15:04"), d.Seq, mark, d.Text)
	}
	return strings.TrimSpace(b.String()), true, nil
}

// What a hit must share with a message to be told as "earlier, on this
// topic": at least half of the message's words (after stemming and stop
// words) or relatedEnough of them, and never fewer than relatedMin. A
// message of one word (a greeting) is told nothing.
const (
	relatedMin    = 2
	relatedEnough = 4
	relatedShare  = 0.5
	// relatedDepth is how many BM25 hits Related weighs.
	relatedDepth = 20
)

// Related is what the index holds on the topic of text, for the turn
// notes of a conversation's first message: the best n BM25 hits among
// those q's filter lets through whose score — the share of text's words
// they hold — clears the threshold above, one a source (a conversation,
// a canvas, a file), none of conversation exclude. BM25 alone: it runs
// while the message is stored, and asks no embedding route.
func (x *Index) Related(ctx context.Context, q Query, n int, exclude string) ([]Hit, error) {
	terms := x.terms(q.Text)
	if len(terms) < relatedMin {
		return nil, nil
	}
	need := max(relatedMin, min(relatedEnough, int(math.Ceil(relatedShare*float64(len(terms))))))
	hits, err := x.bm25(ctx, q, relatedDepth)
	if err != nil {
		return nil, err
	}
	a := x.idx.Mapping().AnalyzerNamed(en.AnalyzerName)
	seen := map[string]bool{}
	var out []Hit
	for _, h := range hits {
		if len(out) == n {
			break
		}
		src := h.Conversation
		switch {
		case h.Canvas != "":
			src = "canvas:" + h.Canvas
		case src == "":
			src = h.Kind + ":" + h.Agent + ":" + h.Path
		}
		if (exclude != "" && h.Conversation == exclude) || seen[src] {
			continue
		}
		shared := map[string]bool{}
		for _, t := range a.Analyze([]byte(h.Title + "\n" + h.Text)) {
			if terms[string(t.Term)] {
				shared[string(t.Term)] = true
			}
		}
		if len(shared) < need {
			continue
		}
		seen[src] = true
		out = append(out, h)
	}
	return x.marked(out, terms), nil
}
