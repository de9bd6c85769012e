package web

import (
	"context"
	"fmt"
	"net/http"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/team"
)

// Teams is the team runtime as the pages and the API read it (R-TEAM): a
// lead conversation's team.
type Teams interface {
	Exists(ctx context.Context, conversation string) (bool, error)
	View(ctx context.Context, conversation string) (team.View, error)
	// Remove is the host's removal of a worktree (team "": the one team
	// that binds the name); its refusals are team's sentinels.
	Remove(ctx context.Context, name, team string, discard bool) (string, error)
}

// teamOf is the team of the path's conversation, or ErrNotFound.
func (s *server) teamOf(r *http.Request, id string) (team.View, error) {
	ok, err := s.cfg.Teams.Exists(r.Context(), id)
	if err != nil {
		return team.View{}, err
	}
	if !ok {
		return team.View{}, fmt.Errorf("%w: conversation %s leads no team", ErrNotFound, id)
	}
	return s.cfg.Teams.View(r.Context(), id)
}

func (s *server) routesTeams(mux *router) {
	mux.HandleFunc("GET /api/teams/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		v, err := s.teamOf(r, id)
		s.reply(w, r, v, err)
	})
	mux.HandleFunc("POST /api/worktrees/{name}/remove", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Team    string `json:"team"`
			Discard bool   `json:"discard"`
		}
		if !decodeBody(w, r, &body) {
			return
		}
		name := r.PathValue("name")
		if err := events.ValidID(name); err != nil || (body.Team != "" && events.ValidID(body.Team) != nil) {
			writeError(w, http.StatusBadRequest, "invalid_id", "name and team are ids: 1-128 of [A-Za-z0-9_-]")
			return
		}
		msg, err := s.cfg.Teams.Remove(r.Context(), name, body.Team, body.Discard)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"result": msg})
	})
}
