package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/ui"

	"github.com/my-agent-crew/crew/events"
)

// Teams is the team runtime as the pages and the API read it (R-TEAM): a
// lead conversation's team.
type Teams interface {
	Exists(ctx context.Context, conversation string) (bool, error)
	View(ctx context.Context, conversation string) (view.Team, error)
	// Remove is the host's removal of a worktree (team "": the one team
	// that binds the name); its refusals are team's sentinels.
	Remove(ctx context.Context, name, team string, discard bool) (string, error)
	// StopTeam is the owner's stop of every member's current turn and the
	// lead's (refusal.ErrNothingRunning when none runs or waits).
	StopTeam(ctx context.Context, team, by string) ([]view.StoppedTurn, error)
}

// teamOf is the team of the path's conversation, or ErrNotFound.
func (s *server) teamOf(r *http.Request, id string) (view.Team, error) {
	ok, err := s.cfg.Teams.Exists(r.Context(), id)
	if err != nil {
		return view.Team{}, err
	}
	if !ok {
		return view.Team{}, fmt.Errorf("%w: conversation %s leads no team", ErrNotFound, id)
	}
	return s.cfg.Teams.View(r.Context(), id)
}

// team is the team page of a lead conversation.
func (p *Pages) team(ctx context.Context, r *http.Request, s *server, id, csrf string) (ui.TeamView, error) {
	// The live feed starts after what the page shows (read before it).
	seq, err := s.cfg.Log.Last(ctx, events.Root+".>")
	if err != nil {
		return ui.TeamView{}, err
	}
	// ...and the projections it reads have applied that much: rendered
	// from a projection behind seq (the lead's run stopped in the log, still
	// running in the projection), the page showed Stop for a team at rest,
	// and its feed, starting after seq, never brought the change.
	p.caughtUp(ctx, seq)
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
	v := ui.TeamView{Shell: sh, Conv: p.row(c), Plan: tv.Plan, After: seq, Busy: c.Queued > 0 ||
		c.Status == projections.ConversationRunning || c.Status == projections.ConversationAwaitingApproval || c.Status == projections.ConversationAwaitingAnswer}
	for _, m := range tv.Members {
		v.Members = append(v.Members, ui.TeamMemberRow{Name: m.Name, Agent: m.Agent, Responsibility: m.Responsibility,
			Conversation: m.Conversation, State: m.State, Task: m.Task, Plan: m.Plan})
		v.Busy = v.Busy || m.State == view.StateWork
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
	mux.HandleFunc("GET /api/teams/{id}/stream", s.teamStream)
	mux.HandleFunc("POST /api/teams/{id}/stop", func(w http.ResponseWriter, r *http.Request) {
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
		got, err := s.stopTeam(r, id, by)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusAccepted, map[string]any{"team": id, "stopped": got})
	})
	if s.cfg.Pages != nil {
		mux.HandleFunc("POST /c/{id}/team/stop", s.form(func(w http.ResponseWriter, r *http.Request) {
			id, ok := pathID(w, r)
			if !ok {
				return
			}
			got, err := s.stopTeam(r, id, events.StopByWeb)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			if wantsJSON(r) {
				writeJSON(w, http.StatusAccepted, map[string]any{"team": id, "stopped": got})
				return
			}
			http.Redirect(w, r, "/c/"+id+"/team", http.StatusSeeOther)
		}))
	}
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

// stopTeam is the owner's stop of team id: 404 for a conversation that
// leads no team.
func (s *server) stopTeam(r *http.Request, id, by string) ([]view.StoppedTurn, error) {
	ok, err := s.cfg.Teams.Exists(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: conversation %s leads no team", ErrNotFound, id)
	}
	return s.cfg.Teams.StopTeam(r.Context(), id, by)
}

// teamStream is the team page's live feed (R-TEAM, R-WEB): an event
// "team" for every change of the board, the mail, or a run of the lead or
// a member, with the stream sequence as id; the page then fetches itself
// again. ?after=N (or Last-Event-ID) resumes after that event; without it
// the feed starts now.
func (s *server) teamStream(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if ok, err := s.cfg.Teams.Exists(r.Context(), id); err != nil || !ok {
		s.fail(w, r, cmpErr(err, fmt.Errorf("%w: conversation %s leads no team", ErrNotFound, id)))
		return
	}
	from, ok := resumeFrom(w, r)
	if !ok {
		return
	}
	if from == 0 {
		last, err := s.cfg.Log.Last(r.Context(), events.Root+".>")
		if err != nil {
			s.fail(w, r, err)
			return
		}
		from = last + 1
	}
	flusher, ok := sseStart(w)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	frames := make(chan []byte)
	filters := []string{events.Team(id).Filter(), events.MailOf(id)}
	for _, typ := range []string{events.TypeRunStarted, events.TypeRunFinished, events.TypeMessageReceived, events.TypeConversationOpened,
		events.TypeApprovalRequested, events.TypeApprovalDecided} {
		filters = append(filters, events.Root+".conv.*."+typ)
	}
	go func() {
		defer cancel()
		for env, err := range s.cfg.Log.FollowAll(ctx, filters, from) {
			if err != nil {
				return
			}
			scope := events.ScopeOf(env.Subject)
			if scope.Kind() == "conv" && scope.ID() != id && !strings.HasPrefix(scope.ID(), view.MemberConversation(id, "")) {
				continue
			}
			s.pagesCaughtUp(ctx, env.Seq) // the page fetched on this event shows it
			body, _ := json.Marshal(map[string]any{"type": env.Type, "seq": env.Seq, "scope": scope.Kind(), "id": scope.ID()})
			select {
			case frames <- sseFrame("team", strconv.FormatUint(env.Seq, 10), body):
			case <-ctx.Done():
				return
			}
		}
	}()
	pump(ctx, w, flusher, frames, nil)
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}
