package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/my-agent-crew/crew/projections/search"
	"github.com/my-agent-crew/crew/tools/recall"
	"github.com/my-agent-crew/crew/ui"
)

// searchLimit is how many hits the page and the API return at most.
const searchLimit = 50

// searchKinds maps the kind filter (?kind=) to the index's kinds: a scope
// (conversations, memory, canvas) or one kind.
func searchKinds(kind string) ([]string, error) {
	if kind == "" || kind == "all" {
		return nil, nil
	}
	if ks, ok := search.Scopes[kind]; ok {
		return ks, nil
	}
	for _, ks := range search.Scopes {
		for _, k := range ks {
			if k == kind {
				return []string{k}, nil
			}
		}
	}
	return nil, fmt.Errorf("kind %q: use conversations, memory, canvas, all or one of message, reply, summary, note, memory, fact, wiki, canvas, canvas_version", kind)
}

// searchQuery reads q, kind and since; an error names the parameter.
func (s *server) searchQuery(r *http.Request) (search.Query, error) {
	v := r.URL.Query()
	q := search.Query{Text: strings.TrimSpace(v.Get("q")), Limit: searchLimit}
	var err error
	if q.Kinds, err = searchKinds(v.Get("kind")); err != nil {
		return q, err
	}
	if since := v.Get("since"); since != "" {
		loc := time.UTC
		if s.cfg.Pages != nil && s.cfg.Pages.Location != nil {
			loc = s.cfg.Pages.Location
		}
		if q.Since, err = recall.ParseSince(since, loc); err != nil {
			return q, fmt.Errorf("since %q: %w", since, err)
		}
	}
	return q, nil
}

// searchHit is one hit as GET /api/search answers it.
type searchHit struct {
	search.Hit
	Source string `json:"source"`
	Link   string `json:"link"`
	Ref    string `json:"ref"`
}

func (s *server) routesSearch(mux *router) {
	x := s.cfg.Search
	mux.HandleFunc("GET /api/search", func(w http.ResponseWriter, r *http.Request) {
		q, err := s.searchQuery(r)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_query", err.Error())
			return
		}
		if q.Text == "" {
			writeError(w, http.StatusBadRequest, "bad_query", "q is required: the words to find")
			return
		}
		hits, err := x.Search(r.Context(), q)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "search_failed", err.Error())
			return
		}
		out := make([]searchHit, 0, len(hits))
		for _, h := range hits {
			out = append(out, searchHit{Hit: h, Source: h.Source(), Link: h.Link(), Ref: h.Ref()})
		}
		writeJSON(w, http.StatusOK, map[string]any{"query": q.Text, "mode": searchMode(x), "hits": out})
	})
	if s.cfg.Pages == nil {
		return
	}
	mux.HandleFunc("GET /search", s.page(func(r *http.Request, csrf string) (templ.Component, error) {
		sh, err := s.cfg.Pages.shell(r.Context(), "Search", "", csrf)
		if err != nil {
			return nil, err
		}
		vals := r.URL.Query()
		v := ui.SearchView{Shell: sh, Query: vals.Get("q"), Kind: vals.Get("kind"), Since: vals.Get("since"), Mode: searchMode(x)}
		q, qerr := s.searchQuery(r)
		if qerr != nil {
			v.Error = qerr.Error()
			return ui.SearchPage(v), nil
		}
		if q.Text == "" {
			return ui.SearchPage(v), nil
		}
		v.Searched = true
		hits, err := x.Search(r.Context(), q)
		if err != nil {
			return nil, err
		}
		v.Groups = groupHits(hits)
		return ui.SearchPage(v), nil
	}))
}

// searchMode says how hits are ranked, for the page and the API.
func searchMode(x *search.Index) string {
	if r := x.EmbeddingRoute(); r != "" {
		return "Ranked by words (BM25) and meaning (" + r + "), fused."
	}
	return "Ranked by words (BM25); no embedding route is configured."
}

// kindGroups orders the page's groups and names them.
var kindGroups = []struct{ kind, label string }{
	{search.KindMessage, "Your messages"}, {search.KindReply, "Replies"}, {search.KindSummary, "Conversation summaries"},
	{search.KindNote, "Notes"}, {search.KindMemory, "MEMORY.md"}, {search.KindFact, "Facts about you"}, {search.KindWiki, "Wiki"},
	{search.KindCanvas, "Canvases"}, {search.KindCanvasV, "Older canvas versions"},
}

// groupHits groups hits by kind, each group in rank order.
func groupHits(hits []search.Hit) []ui.SearchGroup {
	var out []ui.SearchGroup
	for _, g := range kindGroups {
		var hs []ui.SearchHit
		for _, h := range hits {
			if h.Kind == g.kind {
				hs = append(hs, ui.SearchHit{Source: h.Source(), Link: h.Link(), Pieces: pieces(h.Snippet, h.Marks)})
			}
		}
		if len(hs) > 0 {
			out = append(out, ui.SearchGroup{Kind: g.kind, Label: g.label, Hits: hs})
		}
	}
	return out
}

// pieces cuts a snippet at its marks (byte ranges, sorted, not
// overlapping); the template escapes each piece.
func pieces(s string, marks [][2]int) []ui.SnippetPiece {
	var out []ui.SnippetPiece
	at := 0
	for _, m := range marks {
		if m[0] < at || m[1] > len(s) || m[0] >= m[1] {
			continue
		}
		if m[0] > at {
			out = append(out, ui.SnippetPiece{Text: s[at:m[0]]})
		}
		out = append(out, ui.SnippetPiece{Text: s[m[0]:m[1]], Mark: true})
		at = m[1]
	}
	if at < len(s) {
		out = append(out, ui.SnippetPiece{Text: s[at:]})
	}
	return out
}

// markHit marks the message a search hit opened the conversation at
// (?hit=m:<seq> or r:<seq>): the item whose text is the hit's.
func (s *server) markHit(ctx context.Context, r *http.Request, v *ui.ConversationView) {
	id := r.URL.Query().Get("hit")
	if s.cfg.Search == nil || id == "" {
		return
	}
	h, ok, err := s.cfg.Search.Get(ctx, id, nil)
	if err != nil || !ok || h.Conversation != r.PathValue("id") {
		return
	}
	want := strings.TrimSpace(h.Text)
	kind := ui.ItemUser
	if h.Kind == search.KindReply {
		kind = ui.ItemAssistant
	}
	for i := range v.Items {
		if it := &v.Items[i]; it.Kind == kind && strings.TrimSpace(it.Text) == want {
			it.Hit = true
			return
		}
	}
}
