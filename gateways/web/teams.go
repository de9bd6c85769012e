package web

import (
	"context"
	"fmt"
	"net/http"

	"github.com/my-agent-crew/crew/loop/team"
)

// Teams is the team runtime as the pages and the API read it (R-TEAM): a
// lead conversation's team.
type Teams interface {
	Exists(ctx context.Context, conversation string) (bool, error)
	View(ctx context.Context, conversation string) (team.View, error)
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
}
