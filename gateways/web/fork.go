package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/ui"
)

// Forker forks a recorded run at a step onto a route (R-X-2): a new
// conversation continuing live from that step's request. Errors are
// loop.ErrForkRun, ErrForkStep, ErrForkRoute and ErrForkRefused.
type Forker interface {
	Fork(ctx context.Context, runID string, step int, route string) (Forked, error)
}

// Forked is a fork made: its conversation and run, where it was copied
// from and the route it runs on.
type Forked = view.Forked

// forkRequest is POST /api/runs/{id}/fork.
type forkRequest struct {
	FromStep int    `json:"from_step"`
	Route    string `json:"route"`
}

// routesFork serves POST /api/runs/{id}/fork and, with pages, the runs
// page's form POST /runs/{id}/fork (CSRF-checked; it redirects to the
// fork's runs).
func (s *server) routesFork(mux *router) {
	f := s.cfg.Forks
	mux.HandleFunc("POST /api/runs/{id}/fork", func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		var req forkRequest
		if !decodeBody(w, r, &req) {
			return
		}
		if req.FromStep < 1 || strings.TrimSpace(req.Route) == "" {
			writeError(w, http.StatusBadRequest, "bad_request", `want {"from_step": N (1 or more), "route": "provider:model"}`)
			return
		}
		fk, err := f.Fork(r.Context(), id, req.FromStep, req.Route)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, fk)
	})
	if s.cfg.Pages == nil {
		return
	}
	mux.HandleFunc("POST /runs/{id}/fork", s.form(func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r)
		if !ok {
			return
		}
		step, err := strconv.Atoi(r.PostFormValue("from_step"))
		route := strings.TrimSpace(r.PostFormValue("route"))
		if err != nil || step < 1 || route == "" {
			writeError(w, http.StatusBadRequest, "bad_request", "from_step must be a step number and route a route")
			return
		}
		fk, err := f.Fork(r.Context(), id, step, route)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/c/%s/runs", fk.Conversation), http.StatusSeeOther)
	}))
}

// Fork asks the running server to fork run at step onto route, as crew
// replay --from-step does on a stopped home.
func (c Client) Fork(ctx context.Context, runID string, step int, route string) (Forked, error) {
	var fk Forked
	body, _ := json.Marshal(forkRequest{FromStep: step, Route: route})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+"/api/runs/"+runID+"/fork", bytes.NewReader(body))
	if err != nil {
		return fk, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fk, fmt.Errorf("ask the running server: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fk, fmt.Errorf("ask the running server: %w", err)
	}
	if resp.StatusCode != http.StatusCreated {
		var apiErr struct {
			Error struct{ Message string } `json:"error"`
		}
		if json.Unmarshal(raw, &apiErr) == nil && apiErr.Error.Message != "" {
			return fk, fmt.Errorf("the running server answered %s: %s", resp.Status, apiErr.Error.Message)
		}
		return fk, fmt.Errorf("the running server answered %s: %s", resp.Status, bytes.TrimSpace(raw))
	}
	if err := json.Unmarshal(raw, &fk); err != nil {
		return fk, fmt.Errorf("read the server's answer: %w", err)
	}
	return fk, nil
}

// forkLinks are a run's fork links as the runs page shows them.
func forkLinks(r projections.RunSummary) (from *ui.ForkLink, forks []ui.ForkLink) {
	if f := r.ForkedFrom; f != nil {
		from = &ui.ForkLink{RunID: f.RunID, Conversation: f.Conversation, Step: f.Step, Route: f.Route}
	}
	for _, f := range r.Forks {
		forks = append(forks, ui.ForkLink{RunID: f.RunID, Conversation: f.Conversation, Step: f.Step, Route: f.Route})
	}
	return from, forks
}

// forkForms puts "Fork from here" on each step of a run that made a
// model call there; a delegated child's run is forked through its
// parent's (loop.ErrForkRefused).
func forkForms(card *ui.RunCard, s projections.RunSummary, csrf string) {
	if s.ParentRunID != "" {
		return
	}
	for i := range card.Steps {
		if st := &card.Steps[i]; st.N >= 1 && len(st.ModelCalls) > 0 {
			st.Fork = &ui.ForkForm{RunID: card.ID, Step: st.N, CSRF: csrf}
		}
	}
}

// forkRoutes are the routes the fork forms offer: the crew's and those
// the page's runs called, sorted.
func (p *Pages) forkRoutes(runs []ui.RunCard) []string {
	seen := map[string]bool{}
	if p.Crew != nil {
		agents, _ := crewRows(p.Crew, p.MCP)
		for _, a := range agents {
			for _, r := range strings.Split(a.Routes, ",") {
				seen[strings.TrimSpace(r)] = true
			}
		}
	}
	for _, a := range p.Agents {
		for _, r := range strings.Split(a.Routes, ",") {
			seen[strings.TrimSpace(r)] = true
		}
	}
	for _, c := range runs {
		for _, st := range c.Steps {
			for _, m := range st.ModelCalls {
				seen[m.Route] = true
			}
		}
	}
	delete(seen, "")
	return slices.Sorted(maps.Keys(seen))
}
