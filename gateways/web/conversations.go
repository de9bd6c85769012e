package web

import (
	"context"
	"net/http"
)

// ConversationOps summarizes and closes conversations on demand
// (summarize.Summarizer). Errors: summarize.ErrUnknownConversation (or
// ErrNotFound) for an unknown conversation; summarize.ErrNotClosable,
// summarize.ErrNothingToSummarize (or ErrRefused) for one that cannot be
// summarized or closed now.
type ConversationOps interface {
	// Summarize stores a summary of the conversation so far and returns it.
	Summarize(ctx context.Context, id string) (string, error)
	// Close summarizes (when the owner talks on its channel) and closes the
	// conversation; the next message on the channel opens a new one that
	// is told the summary.
	Close(ctx context.Context, id string) (summary string, err error)
}

// routeConversationOps serves POST /api/conversations/{id}/summarize and
// /close, and the chat page's "new conversation" form.
func (s *server) routeConversationOps(mux *router) {
	ops := s.cfg.Conversations
	if ops == nil {
		return
	}
	mux.HandleFunc("POST /api/conversations/{id}/summarize", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		sum, err := ops.Summarize(r.Context(), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"conversation_id": id, "summary": sum})
	})
	mux.HandleFunc("POST /api/conversations/{id}/close", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		sum, err := ops.Close(r.Context(), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"conversation_id": id, "status": "closed", "summary": sum})
	})
	if s.cfg.Pages != nil {
		mux.HandleFunc("POST /c/{id}/close", s.form(func(w http.ResponseWriter, r *http.Request) {
			id, ok := pathID(w, r)
			if !ok {
				return
			}
			if _, err := ops.Close(r.Context(), id); err != nil {
				s.fail(w, r, err)
				return
			}
			http.Redirect(w, r, "/", http.StatusSeeOther)
		}))
	}
}
