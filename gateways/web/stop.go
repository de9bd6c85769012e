package web

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/refusal"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/gateways/inbound"
)

// Stopper stops conversations (inbound.Stops): the owner's stop (issue 27).
type Stopper interface {
	Stop(ctx context.Context, conversation, scope, by string) (view.Stopped, error)
	StopAll(ctx context.Context, by string) ([]inbound.StoppedConversation, error)
	RemoveWaiting(ctx context.Context, conversation string, n int, by string) error
}

type stopRequest struct {
	Scope string `json:"scope"`
	// By: "cli" when crew stop sends it; otherwise the API's "api".
	By string `json:"by"`
}

// apiBy is who a stop through the API is by: api, or cli for crew stop.
func apiBy(w http.ResponseWriter, req stopRequest) (string, bool) {
	switch req.By {
	case "", events.StopByAPI:
		return events.StopByAPI, true
	case events.StopByCLI:
		return events.StopByCLI, true
	}
	writeError(w, http.StatusBadRequest, "bad_request", `"by" is "api" (the default) or "cli"`)
	return "", false
}

// routeStops serves POST /api/conversations/{id}/stop and POST /api/stop
// (by "api"), and the chat page's Stop and the sidebar's Stop all forms
// (by "web", CSRF-checked like every form).
func (s *server) routeStops(mux *router) {
	st := s.cfg.Stops
	if st == nil {
		return
	}
	mux.HandleFunc("POST /api/conversations/{id}/stop", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		var req stopRequest
		if !decodeOptionalBody(w, r, &req) {
			return
		}
		by, ok := apiBy(w, req)
		if !ok {
			return
		}
		got, err := st.Stop(r.Context(), id, req.Scope, by)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusAccepted, got)
	})
	mux.HandleFunc("POST /api/stop", func(w http.ResponseWriter, r *http.Request) {
		var req stopRequest
		if !decodeOptionalBody(w, r, &req) {
			return
		}
		by, ok := apiBy(w, req)
		if !ok {
			return
		}
		got, err := st.StopAll(r.Context(), by)
		if err != nil && !(errors.Is(err, refusal.ErrNothingRunning) && len(got) > 0) {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusAccepted, map[string]any{"stopped": got})
	})
	mux.HandleFunc("DELETE /api/conversations/{id}/queue/{n}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		n, ok := queueN(w, r)
		if !ok {
			return
		}
		if err := st.RemoveWaiting(r.Context(), id, n, events.StopByAPI); err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"conversation_id": id, "removed": n})
	})
	if s.cfg.Pages == nil {
		return
	}
	mux.HandleFunc("POST /c/{id}/queue/{n}/remove", s.form(func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		n, ok := queueN(w, r)
		if !ok {
			return
		}
		if err := st.RemoveWaiting(r.Context(), id, n, events.StopByWeb); err != nil {
			s.fail(w, r, err)
			return
		}
		if wantsJSON(r) {
			writeJSON(w, http.StatusOK, map[string]any{"conversation_id": id, "removed": n})
			return
		}
		http.Redirect(w, r, "/c/"+id, http.StatusSeeOther)
	}))
	mux.HandleFunc("POST /c/{id}/stop", s.form(func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		got, err := st.Stop(r.Context(), id, r.PostFormValue("scope"), events.StopByWeb)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if wantsJSON(r) {
			writeJSON(w, http.StatusAccepted, got)
			return
		}
		http.Redirect(w, r, "/c/"+id, http.StatusSeeOther)
	}))
	mux.HandleFunc("POST /stop", s.form(func(w http.ResponseWriter, r *http.Request) {
		got, err := st.StopAll(r.Context(), events.StopByWeb)
		if err != nil && !errors.Is(err, refusal.ErrNothingRunning) {
			s.fail(w, r, err)
			return
		}
		if wantsJSON(r) {
			writeJSON(w, http.StatusAccepted, map[string]any{"stopped": got})
			return
		}
		back := r.PostFormValue("back")
		if !strings.HasPrefix(back, "/c/") || back == "/c/" || strings.Contains(back, "//") || strings.Contains(back, "\\") {
			back = "/"
		}
		http.Redirect(w, r, back, http.StatusSeeOther)
	}))
}

// decodeOptionalBody decodes a JSON body into v when there is one; an
// empty body leaves v as it is.
func decodeOptionalBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", "body too large or cut: "+err.Error())
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return true
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return decodeBody(w, r, v)
}

// queueN reads {n}, a waiting message's place from 1.
func queueN(w http.ResponseWriter, r *http.Request) (int, bool) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 1 {
		writeError(w, http.StatusBadRequest, "bad_request", "n is a waiting message's place in the queue, counting from 1")
		return 0, false
	}
	return n, true
}
