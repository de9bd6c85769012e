package web

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/a-h/templ"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/ui"
)

// MemoryService files, decides and rolls back proposed rewrites of an
// agent's MEMORY.md (R-MEM-2). Answers are shown as JSON; Rows feeds the
// /memory page (Memory is the crew's). Errors wrap consolidate's
// sentinels, which statusOf maps.
type MemoryService interface {
	Proposals(ctx context.Context, agent string) (any, error)
	Proposal(ctx context.Context, id string) (any, error)
	Consolidate(ctx context.Context, agent, trigger string) (any, error)
	Decide(ctx context.Context, id string, approve bool, channel string) (any, error)
	Rollback(ctx context.Context, id, channel string) (any, error)
	Rows(ctx context.Context, agent string) ([]ui.ProposalRow, error)
}

// routesMemory serves /api/memory/… and, with the site, /memory.
func (s *server) routesMemory(mux *router) {
	mem := s.cfg.Memory
	mux.HandleFunc("GET /api/memory/proposals", func(w http.ResponseWriter, r *http.Request) {
		agent := r.URL.Query().Get("agent")
		if agent != "" {
			if err := events.ValidID(agent); err != nil {
				writeError(w, http.StatusBadRequest, "invalid_id", err.Error())
				return
			}
		}
		v, err := mem.Proposals(r.Context(), agent)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
	mux.HandleFunc("GET /api/memory/proposals/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		v, err := mem.Proposal(r.Context(), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
	mux.HandleFunc("POST /api/memory/proposals/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		var req struct {
			Decision string `json:"decision"` // approve | reject
		}
		if !decodeBody(w, r, &req) {
			return
		}
		if req.Decision != "approve" && req.Decision != "reject" {
			writeError(w, http.StatusBadRequest, "bad_request", `decision must be "approve" or "reject"`)
			return
		}
		v, err := mem.Decide(r.Context(), id, req.Decision == "approve", "api")
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
	mux.HandleFunc("POST /api/memory/proposals/{id}/rollback", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		v, err := mem.Rollback(r.Context(), id, "api")
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
	mux.HandleFunc("POST /api/memory/consolidate", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Agent   string `json:"agent"`
			Trigger string `json:"trigger"` // "api" (default), or "cli" when crew memory consolidate asks
		}
		if !decodeBody(w, r, &req) {
			return
		}
		if err := events.ValidID(req.Agent); err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", "agent: "+err.Error())
			return
		}
		switch req.Trigger {
		case "":
			req.Trigger = "api"
		case "api", "cli":
		default:
			writeError(w, http.StatusBadRequest, "bad_request", `trigger must be "api" or "cli"`)
			return
		}
		v, err := mem.Consolidate(r.Context(), req.Agent, req.Trigger)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, v)
	})
	if s.cfg.Pages == nil {
		return
	}
	mux.HandleFunc("GET /memory", s.page(func(r *http.Request, csrf string) (templ.Component, error) {
		return s.memoryPage(r, csrf, "")
	}))
	mux.HandleFunc("POST /memory/consolidate", s.form(func(w http.ResponseWriter, r *http.Request) {
		agent := r.PostFormValue("agent")
		if err := events.ValidID(agent); err != nil {
			s.memoryFormError(w, r, http.StatusBadRequest, "bad_request", err)
			return
		}
		v, err := mem.Consolidate(r.Context(), agent, "api")
		s.memoryFormDone(w, r, v, err, "/memory?agent="+agent)
	}))
	mux.HandleFunc("POST /memory/{id}/decide", s.form(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if err := events.ValidID(id); err != nil {
			s.memoryFormError(w, r, http.StatusBadRequest, "invalid_id", err)
			return
		}
		d := r.PostFormValue("decision")
		if d != "approve" && d != "reject" {
			s.memoryFormError(w, r, http.StatusBadRequest, "bad_request", errors.New(`decision must be approve or reject`))
			return
		}
		v, err := mem.Decide(r.Context(), id, d == "approve", "web")
		s.memoryFormDone(w, r, v, err, memoryBack(r, id))
	}))
	mux.HandleFunc("POST /memory/{id}/rollback", s.form(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if err := events.ValidID(id); err != nil {
			s.memoryFormError(w, r, http.StatusBadRequest, "invalid_id", err)
			return
		}
		v, err := mem.Rollback(r.Context(), id, "web")
		s.memoryFormDone(w, r, v, err, memoryBack(r, id))
	}))
}

func (s *server) memoryPage(r *http.Request, csrf, errText string) (templ.Component, error) {
	agent := r.URL.Query().Get("agent")
	if agent != "" && events.ValidID(agent) != nil {
		agent = ""
	}
	sh, err := s.cfg.Pages.shell(r.Context(), "Memory", "", csrf)
	if err != nil {
		return nil, err
	}
	rows, err := s.cfg.Memory.Rows(r.Context(), agent)
	if err != nil {
		return nil, err
	}
	v := ui.MemoryView{Shell: sh, Agent: agent, Error: errText, Proposals: rows}
	if s.cfg.Pages.DB != nil {
		writes, err := s.cfg.Pages.reader().MemoryWrites(r.Context(), agent, true, 50)
		if err != nil {
			return nil, err
		}
		loc := cmp.Or(s.cfg.Pages.Location, time.UTC)
		for _, w := range writes {
			v.Untrusted = append(v.Untrusted, ui.MemoryWriteRow{When: w.At.In(loc).Format("Jan 2 15:04"), Agent: w.Agent, Tool: w.Tool,
				Path: w.Path, Untrusted: w.Untrusted, RunID: w.RunID, Runs: "/c/" + w.Conversation + "/runs"})
		}
	}
	return ui.MemoryPage(v), nil
}

// memoryBack is the page a decision form returns to: the same agent's
// proposals, at the one decided.
func memoryBack(r *http.Request, id string) string {
	if agent := r.PostFormValue("agent"); events.ValidID(agent) == nil {
		return "/memory?agent=" + agent + "#p-" + id
	}
	return "/memory#p-" + id
}

// memoryFormDone answers a form: JSON for app.js, else back to the page,
// or the page again with the refusal shown.
func (s *server) memoryFormDone(w http.ResponseWriter, r *http.Request, v any, err error, back string) {
	if err == nil {
		if wantsJSON(r) {
			writeJSON(w, http.StatusOK, v)
			return
		}
		http.Redirect(w, r, back, http.StatusSeeOther)
		return
	}
	status, code, ok := statusOf(err)
	if !ok {
		if wantsJSON(r) || errors.Is(err, context.Canceled) {
			s.fail(w, r, err)
			return
		}
		s.logger().Error("memory form failed", "path", r.URL.Path, "err", err)
		status, code = http.StatusInternalServerError, "internal"
	}
	s.memoryFormError(w, r, status, code, err)
}

func (s *server) memoryFormError(w http.ResponseWriter, r *http.Request, status int, code string, err error) {
	if wantsJSON(r) {
		writeError(w, status, code, err.Error())
		return
	}
	c, perr := s.memoryPage(r, ensureCSRF(w, r), err.Error())
	if perr != nil {
		writeError(w, status, code, err.Error())
		return
	}
	htmlHeaders(w)
	w.WriteHeader(status)
	if err := c.Render(r.Context(), w); err != nil {
		s.logger().Error("render", "path", r.URL.Path, "err", err)
	}
}
