package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/tools/canvas"
	"github.com/my-agent-crew/crew/ui"
)

// CanvasAPI serves /api/artifacts and the conversations' open canvas
// (R-CAN). Every write here is the owner's.
type CanvasAPI struct {
	Service *canvas.Service
	// Crew is the agents whose workspaces hold a canvas's source file,
	// read again on a reimport; nil: no reimport.
	Crew Agents
	// Focus stores a conversation's open canvas (loop.Convs).
	Focus Focuser
	// Fresh is the projections' read-your-writes (the Runner).
	Fresh projections.Freshness
	// CDNs are the hosts a render may load scripts, styles and fonts from
	// (DefaultCDNs when nil); MermaidURL and MermaidIntegrity pin Mermaid.
	CDNs             []string
	MermaidURL       string
	MermaidIntegrity string
}

// The public CDNs a sandboxed render may load scripts, styles and fonts
// from, and Mermaid pinned to one version by its integrity hash.
var DefaultCDNs = []string{"https://cdn.jsdelivr.net", "https://unpkg.com", "https://cdnjs.cloudflare.com"}

const (
	MermaidURL       = "https://cdn.jsdelivr.net/npm/mermaid@12.3.0/dist/mermaid.min.js"
	MermaidIntegrity = "sha384-HHW54r639fK42Ip0coGF3mz8oSiGn0eEoWNTLs75X7H63pLSDBa0Tqs0RwGmLlXE"
)

// canvasBody bounds a canvas request: the largest version (html, 4 MB)
// JSON-escaped, with room to spare.
const canvasBody = 3*canvas.HTMLCap + 64<<10

func (s *server) routesCanvas(mux *router) {
	c := s.cfg.Canvas
	mux.HandleFunc("GET /api/artifacts", func(w http.ResponseWriter, r *http.Request) {
		list, err := c.Service.Store.List(r.URL.Query().Get("q"))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out := make([]artifactJSON, 0, len(list))
		for _, rec := range list {
			out = append(out, artifactOf(rec))
		}
		writeJSON(w, http.StatusOK, map[string]any{"artifacts": out})
	})
	mux.HandleFunc("POST /api/artifacts", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Title    string  `json:"title"`
			Kind     string  `json:"kind"`
			Content  *string `json:"content"`
			Language string  `json:"language"`
		}
		if !decodeBodyUpTo(w, r, &req, canvasBody) {
			return
		}
		if req.Content == nil {
			writeError(w, http.StatusBadRequest, "bad_request", "content is required (it may be empty)")
			return
		}
		if req.Kind == events.KindImage {
			writeError(w, http.StatusUnprocessableEntity, "bad_kind", "image canvases come only from a workspace file (artifact_import)")
			return
		}
		wr, err := c.Service.Create(r.Context(), canvas.Write{Title: req.Title, Kind: req.Kind, Language: req.Language, Content: *req.Content,
			Op: events.OpCreate, Author: events.AuthorOwner})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, map[string]any{"id": wr.Record.ID, "version": wr.Version})
	})
	mux.HandleFunc("GET /api/artifacts/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, version, ok := artifactVersion(w, r)
		if !ok {
			return
		}
		rec, v, text, err := c.Service.Content(id, version)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out := artifactOf(rec)
		writeJSON(w, http.StatusOK, map[string]any{"id": rec.ID, "title": rec.Title, "kind": rec.Kind, "language": rec.Language, "mime": rec.MIME,
			"version": v.Version, "latest_version": out.Version, "author": v.Author, "time": v.Time, "note": v.Note, "op": v.Op,
			"content": text, "conversations": out.Conversations, "source": rec.Source})
	})
	mux.HandleFunc("PUT /api/artifacts/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok || !jsonBody(w, r) {
			return
		}
		var req struct {
			Content     *string `json:"content"`
			BaseVersion int     `json:"base_version"`
		}
		if !decodeBodyUpTo(w, r, &req, canvasBody) {
			return
		}
		if req.Content == nil || req.BaseVersion < 1 {
			writeError(w, http.StatusBadRequest, "bad_request", "content and base_version (the version the edit was made on) are required")
			return
		}
		rec, err := c.Service.Get(id)
		if err == nil && rec.Kind == events.KindImage {
			err = fmt.Errorf("%w: an image canvas changes only by reimport", canvas.ErrBadKind)
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		wr, err := c.Service.Save(r.Context(), canvas.Write{Artifact: id, Content: *req.Content, Op: events.OpSave, Author: events.AuthorOwner, Base: req.BaseVersion}, nil)
		var stale *canvas.StaleError
		if errors.As(err, &stale) {
			writeJSON(w, http.StatusConflict, map[string]any{"error": map[string]string{"code": "stale", "message": stale.Error()},
				"base_version": stale.Base, "latest_version": stale.Latest, "diff": stale.Diff})
			return
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "version": wr.Version, "changed": wr.Changed, "replaced": wr.Replaced})
	})
	mux.HandleFunc("PATCH /api/artifacts/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok || !jsonBody(w, r) {
			return
		}
		var req struct {
			Title string `json:"title"`
		}
		if !decodeBody(w, r, &req) {
			return
		}
		rec, err := c.Service.Rename(r.Context(), id, req.Title, events.AuthorOwner, "", nil)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": rec.ID, "title": rec.Title})
	})
	mux.HandleFunc("DELETE /api/artifacts/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		if err := c.Service.Delete(r.Context(), id); err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
	})
	mux.HandleFunc("GET /api/artifacts/{id}/versions", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		rec, err := c.Service.Get(id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out := make([]map[string]any, 0, len(rec.Versions))
		for i := len(rec.Versions) - 1; i >= 0; i-- {
			v := rec.Versions[i]
			out = append(out, map[string]any{"version": v.Version, "author": v.Author, "time": v.Time, "note": v.Note, "op": v.Op, "bytes": v.Bytes})
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "versions": out})
	})
	mux.HandleFunc("POST /api/artifacts/{id}/restore", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		var req struct {
			Version int `json:"version"`
		}
		if !decodeBody(w, r, &req) {
			return
		}
		if req.Version < 1 {
			writeError(w, http.StatusBadRequest, "bad_request", "version is required")
			return
		}
		wr, err := c.Service.Restore(r.Context(), id, req.Version, events.AuthorOwner, "")
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "version": wr.Version, "changed": wr.Changed})
	})
	mux.HandleFunc("GET /api/artifacts/{id}/download", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		name, ctype, body, err := c.Service.File(id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
		w.Header().Set("X-Content-Type-Options", "nosniff")
		// Opened instead of saved, a downloaded page still runs nowhere.
		w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	})
	mux.HandleFunc("POST /api/artifacts/{id}/reimport", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		rec, err := c.Service.Get(id)
		if err == nil && rec.Source == nil {
			err = fmt.Errorf("%w: %s", canvas.ErrNoSource, id)
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		ws := ""
		if c.Crew != nil {
			a, _ := c.Crew.Agent(rec.Source.Agent)
			ws = a.Workspace
		}
		if ws == "" {
			s.fail(w, r, fmt.Errorf("%w: agent %s is not loaded", canvas.ErrSourceFailed, rec.Source.Agent))
			return
		}
		f, err := canvas.ReadFile(ws, rec.Source.Agent, rec.Source.Path, rec.Kind, rec.Language)
		if err != nil {
			s.fail(w, r, fmt.Errorf("%w: %w", canvas.ErrSourceFailed, err))
			return
		}
		wr, err := c.Service.Save(r.Context(), canvas.Write{Artifact: id, Content: f.Content, MIME: f.MIME, Op: events.OpImport, Author: events.AuthorOwner,
			Note: "imported from file", Source: f.Source}, nil)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "version": wr.Version, "changed": wr.Changed})
	})
	mux.HandleFunc("GET /api/artifacts/{id}/render", s.render)
	if s.cfg.Pages != nil {
		library := func(r *http.Request, csrf, open string) (templ.Component, error) {
			sh, err := s.cfg.Pages.shell(r.Context(), "Canvases", "", csrf)
			if err != nil {
				return nil, err
			}
			if open != "" {
				if _, err := c.Service.Get(open); err != nil {
					return nil, fmt.Errorf("%w: %v", ErrNotFound, err)
				}
			}
			q := r.URL.Query().Get("q")
			list, err := c.Service.Store.List(q)
			v := ui.CanvasesView{Shell: sh, Query: q, Open: open}
			for _, rec := range list {
				last := rec.Latest()
				v.Canvases = append(v.Canvases, ui.CanvasRow{ID: rec.ID, Title: rec.Title, Kind: kindLabel(rec), Author: last.Author,
					Updated: rec.Updated.In(s.cfg.Pages.Location).Format("2006-01-02 15:04"), Version: last.Version, Bytes: rec.Bytes})
			}
			return ui.CanvasesPage(v), err
		}
		mux.HandleFunc("GET /canvases", s.page(func(r *http.Request, csrf string) (templ.Component, error) { return library(r, csrf, "") }))
		mux.HandleFunc("GET /canvases/{id}", s.page(func(r *http.Request, csrf string) (templ.Component, error) {
			return library(r, csrf, r.PathValue("id"))
		}))
	}
	mux.HandleFunc("GET /api/conversations/{id}/canvas", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		f, _, err := c.Service.Store.Focus(id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, focusJSON(id, f))
	})
	mux.HandleFunc("PUT /api/conversations/{id}/canvas", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok || !jsonBody(w, r) {
			return
		}
		var req struct {
			Artifact string `json:"artifact"`
			FromLine int    `json:"from_line"`
			ToLine   int    `json:"to_line"`
		}
		if !decodeBody(w, r, &req) {
			return
		}
		switch {
		case req.FromLine < 0 || req.ToLine < 0 || req.ToLine < req.FromLine || (req.FromLine == 0) != (req.ToLine == 0):
			writeError(w, http.StatusBadRequest, "bad_request", "from_line and to_line: both or neither, 1-based, from_line <= to_line")
			return
		case req.Artifact == "" && req.FromLine != 0:
			writeError(w, http.StatusBadRequest, "bad_request", "a selection needs an artifact")
			return
		}
		if req.Artifact != "" {
			if _, err := c.Service.Get(req.Artifact); err != nil {
				s.fail(w, r, err)
				return
			}
		}
		f := events.CanvasFocused{Artifact: req.Artifact, FromLine: req.FromLine, ToLine: req.ToLine}
		seq, err := c.Focus.FocusCanvas(r.Context(), id, f)
		if err == nil && c.Fresh != nil {
			err = c.Fresh.WaitFor(r.Context(), seq)
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, focusJSON(id, f))
	})
}

func kindLabel(rec events.CanvasRecord) string {
	if rec.Language != "" {
		return rec.Kind + " (" + rec.Language + ")"
	}
	return rec.Kind
}

// jsonBody refuses a write whose body is not JSON (PUT and PATCH here;
// apiCSRF checks every POST).
func jsonBody(w http.ResponseWriter, r *http.Request) bool {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		writeError(w, http.StatusUnsupportedMediaType, "bad_content_type", "send Content-Type: application/json")
		return false
	}
	return true
}

func artifactVersion(w http.ResponseWriter, r *http.Request) (string, int, bool) {
	id, ok := pathID(w, r)
	if !ok {
		return "", 0, false
	}
	version := 0
	if v := r.URL.Query().Get("version"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "bad_request", "version must be a positive integer")
			return "", 0, false
		}
		version = n
	}
	return id, version, true
}

type artifactJSON struct {
	ID            string    `json:"id"`
	Title         string    `json:"title"`
	Kind          string    `json:"kind"`
	Language      string    `json:"language,omitempty"`
	Version       int       `json:"version"`
	Author        string    `json:"author"`
	Updated       time.Time `json:"updated"`
	Created       time.Time `json:"created"`
	Bytes         int64     `json:"bytes"`
	Conversations []string  `json:"conversations"`
}

func artifactOf(rec events.CanvasRecord) artifactJSON {
	last := rec.Latest()
	convs := rec.Conversations
	if convs == nil {
		convs = []string{}
	}
	return artifactJSON{ID: rec.ID, Title: rec.Title, Kind: rec.Kind, Language: rec.Language, Version: last.Version, Author: last.Author,
		Updated: rec.Updated, Created: rec.Created, Bytes: rec.Bytes, Conversations: convs}
}

func focusJSON(conv string, f events.CanvasFocused) map[string]any {
	return map[string]any{"conversation": conv, "artifact": f.Artifact, "from_line": f.FromLine, "to_line": f.ToLine}
}

// renderCSP is the policy a render is served with: its own opaque origin
// (sandbox without allow-same-origin), no requests back to the app or
// anywhere but scripts, styles and fonts from cdns, media only inline.
func renderCSP(cdns []string) string {
	list := strings.Join(cdns, " ")
	return "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline' " + list + "; style-src 'unsafe-inline' " + list +
		"; font-src " + list + "; img-src data: blob:; media-src data: blob:; connect-src 'none'; form-action 'none'; base-uri 'none'; frame-ancestors 'self'"
}

// render serves an html or mermaid canvas for the sandboxed iframe only:
// a request that is not an iframe's (opened directly, it could navigate
// its own tab anywhere) gets 403.
func (s *server) render(w http.ResponseWriter, r *http.Request) {
	c := s.cfg.Canvas
	id, version, ok := artifactVersion(w, r)
	if !ok {
		return
	}
	if r.Header.Get("Sec-Fetch-Dest") != "iframe" || r.Header.Get("Sec-Fetch-Site") != "same-origin" {
		writeError(w, http.StatusForbidden, "not_iframe", "a render is shown only inside the canvas panel's sandboxed frame")
		return
	}
	rec, _, text, err := c.Service.Content(id, version)
	if err == nil && rec.Kind != events.KindHTML && rec.Kind != events.KindMermaid {
		err = fmt.Errorf("%w: %s is %s", canvas.ErrNotRendered, id, rec.Kind)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cdns := c.CDNs
	if cdns == nil {
		cdns = DefaultCDNs
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", renderCSP(cdns))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-store")
	if rec.Kind == events.KindMermaid {
		text = mermaidPage(cmpOr(c.MermaidURL, MermaidURL), cmpOr(c.MermaidIntegrity, MermaidIntegrity), text)
	}
	w.Write([]byte(text))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// mermaidPage renders a diagram with Mermaid loaded from its pinned URL,
// checked by its integrity hash, and tells the parent frame its height.
func mermaidPage(url, integrity, source string) string {
	return `<!doctype html><html><head><meta charset="utf-8"><style>body{margin:0;padding:8px;font-family:sans-serif;background:#fff}</style>` +
		`<script src="` + html.EscapeString(url) + `" integrity="` + html.EscapeString(integrity) + `" crossorigin="anonymous"></script></head><body>` +
		`<pre class="mermaid">` + html.EscapeString(source) + `</pre><script>` +
		`if(window.mermaid){mermaid.initialize({startOnLoad:false,securityLevel:"strict"});mermaid.run().then(function(){parent.postMessage({canvasHeight:document.body.scrollHeight},"*")}).catch(function(e){document.body.insertAdjacentText("beforeend","Mermaid: "+e.message)})}` +
		`else{document.body.insertAdjacentText("beforeend","Mermaid did not load.")}</script></body></html>`
}

// canvasActivity is what every open tab hears of a canvas event (R-CAN):
// which canvas, which version, who — never the content. nil for an event
// tabs need not hear (a seen mark).
func canvasActivity(env events.Envelope, id string) []byte {
	if env.Type == events.TypeArtifactSeen {
		return nil
	}
	e, err := env.Decode()
	if err != nil {
		return nil
	}
	out := map[string]any{"type": env.Type, "seq": env.Seq, "artifact": id}
	switch e := e.(type) {
	case *events.ArtifactCreated:
		out["version"], out["title"], out["kind"], out["author"], out["conversation"], out["op"] = 1, e.Title, e.Kind, e.Author, e.Conversation, events.OpCreate
	case *events.ArtifactWritten:
		out["version"], out["author"], out["conversation"], out["op"], out["replaces"] = e.Version, e.Author, e.Conversation, e.Op, e.Replaces
	case *events.ArtifactRenamed:
		out["title"], out["author"] = e.Title, e.Author
	case *events.ArtifactDeleted:
		out["author"] = e.Author
	}
	body, _ := json.Marshal(out)
	return body
}
