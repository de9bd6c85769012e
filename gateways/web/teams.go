package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/a-h/templ"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/ui"

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

// team is the team page of a lead conversation.
func (p *Pages) team(ctx context.Context, r *http.Request, s *server, id, csrf string) (ui.TeamView, error) {
	c, err := projections.GetConversation(p.DB, id)
	if errors.Is(err, projections.ErrNotFound) {
		return ui.TeamView{}, fmt.Errorf("conversation %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return ui.TeamView{}, err
	}
	tv, err := s.teamOf(r, id)
	if err != nil {
		return ui.TeamView{}, err
	}
	sh, err := p.shell(ctx, "Team · "+c.Title, id, csrf)
	if err != nil {
		return ui.TeamView{}, err
	}
	v := ui.TeamView{Shell: sh, Conv: p.row(c), Plan: tv.Plan}
	for _, m := range tv.Members {
		v.Members = append(v.Members, ui.TeamMemberRow{Name: m.Name, Agent: m.Agent, Responsibility: m.Responsibility,
			Conversation: m.Conversation, State: m.State, Task: m.Task, Plan: m.Plan})
	}
	for _, t := range tv.Tasks {
		v.Tasks = append(v.Tasks, ui.TeamTaskRow{ID: t.ID, Subject: t.Subject, Status: t.Status, Owner: t.Owner,
			Blockers: strings.Join(t.OpenBlocks, ", "), Worktree: t.Worktree, Result: t.Result})
	}
	for _, m := range tv.Mail {
		v.Mail = append(v.Mail, ui.TeamMailRow{Time: m.Time.In(p.Location).Format("15:04:05"), From: m.From, To: m.To, Type: m.Type,
			Content: m.Content, RequestID: m.RequestID, Status: m.Status})
	}
	for _, q := range tv.Requests {
		v.Requests = append(v.Requests, ui.TeamRequestRow{ID: q.ID, Type: q.Type, From: q.From, To: q.To, Content: q.Content})
	}
	return v, nil
}

func (s *server) routesTeams(mux *router) {
	if s.cfg.Pages != nil {
		s.cfg.Pages.Teams = s.cfg.Teams
		mux.HandleFunc("GET /c/{id}/team", s.page(func(r *http.Request, csrf string) (templ.Component, error) {
			v, err := s.cfg.Pages.team(r.Context(), r, s, r.PathValue("id"), csrf)
			return ui.TeamPage(v), err
		}))
	}
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
