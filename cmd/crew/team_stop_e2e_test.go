package main

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// teamStopAPI plays a lead that spawns bob and then thinks for ever, and a
// bob that reads the board and then thinks for ever: both turns are
// mid-model-call when the owner stops the team. A call that hangs answers
// only when its request is cancelled.
type teamStopAPI struct {
	calls     map[string]*atomic.Int32 // seat → model calls
	hanging   map[string]*atomic.Int32 // seat → calls hanging now
	cancelled atomic.Int32
}

func (a *teamStopAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q, err := parseBoardRequest(r)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	seat := q.seat
	if seat != "lead" {
		seat = "bob"
	}
	n := int(a.calls[seat].Add(1))
	hang := func() {
		a.hanging[seat].Add(1)
		defer a.hanging[seat].Add(-1)
		select {
		case <-r.Context().Done():
			a.cancelled.Add(1)
		case <-time.After(60 * time.Second):
		}
	}
	var text string
	var calls []boardCall
	switch {
	case seat == "bob" && q.count("list_tasks") == 0:
		calls = []boardCall{{"list_tasks", map[string]any{}}}
	case seat == "bob":
		hang()
		return
	case strings.Contains(q.last, "Have bob refactor auth"):
		calls = []boardCall{{"propose_team", map[string]any{"plan": "bob on auth",
			"members": []map[string]string{{"name": "bob", "agent": "coder", "responsibility": "auth"}}}}}
	case strings.HasPrefix(q.last, "The owner confirmed"):
		calls = []boardCall{{"create_task", map[string]any{"subject": "auth"}}}
	case strings.HasPrefix(q.last, "Created task_"):
		calls = []boardCall{{"spawn_teammate", map[string]any{"name": "bob", "task_id": e2eCreated.FindStringSubmatch(q.all)[1]}}}
	case strings.Contains(q.last, "Carry on"):
		text = "lead: carrying on."
	case strings.Contains(q.last, "[Team events"):
		text = "lead: read the team's events."
	default:
		hang() // after the spawn: thinking
		return
	}
	streamReply(w, n, text, calls)
}

// Issue 27 item 4 "Teams" and item 2 "a teammate's current turn", through
// crew serve: POST /api/teams/{id}/stop while bob's model call and the
// lead's are in flight stops both at once (202 with the runs stopped): the
// requests are cancelled, both runs finish stopped by the owner (api), the
// model is not called again in either; the team is held — bob's report
// reaches the lead's mailbox but starts no turn, nothing else runs, so a
// second stop is 409 nothing_running — until the owner writes to the lead,
// whose turns then read the report. An unknown team is 404; the rules of
// the other writes hold (JSON only, Origin, the form's CSRF token).
func TestTeamStopStopsEveryTurnOverHTTP(t *testing.T) {
	api := &teamStopAPI{calls: map[string]*atomic.Int32{"lead": {}, "bob": {}}, hanging: map[string]*atomic.Int32{"lead": {}, "bob": {}}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	home := initHome(t)
	natsURL := enableNATSListen(t, home)
	putAgent(t, home, "coder", "name: Coder\ndescription: writes code\nroutes: [fake:echo]\ntools: [workspace_read, workspace_list]\n", "You write code.")
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/good", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+srv.URL+"/v1")

	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "Have bob refactor auth."})
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "the proposal's card", func(c convView) bool { return c.Status == "awaiting_approval" })
	if code, body := postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"}); code != 200 {
		t.Fatalf("approve = %d %v", code, body)
	}
	eventstest.EventuallyWithin(t, time.Minute, "bob and the lead thinking", func() bool {
		return api.hanging["bob"].Load() == 1 && api.hanging["lead"].Load() == 1
	})
	bobConv := id + "-t-bob"
	leadRun := waitConv(t, s.url, id, "running", func(c convView) bool { return c.Status == "running" }).LastRunID

	// The rules of every write: JSON only, our Origin only, the form's token.
	req, _ := http.NewRequest("POST", s.url+"/api/teams/"+id+"/stop", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://evil.example")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a stop from another origin: %v %v, want 403", resp.StatusCode, err)
	}
	if resp, err := http.Post(s.url+"/api/teams/"+id+"/stop", "text/plain", strings.NewReader(`{}`)); err != nil || resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("a stop as text/plain: %v %v, want 415", resp.StatusCode, err)
	}
	if resp, err := http.PostForm(s.url+"/c/"+id+"/team/stop", url.Values{}); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the team page's stop without its token: %v %v, want 403", resp.StatusCode, err)
	}
	if code, body := postStop(t, s.url+"/api/teams/nope/stop", nil); code != http.StatusNotFound {
		t.Fatalf("an unknown team = %d %v, want 404", code, body)
	}
	if api.hanging["bob"].Load() != 1 || api.hanging["lead"].Load() != 1 {
		t.Fatal("a refused stop stopped something")
	}

	code, got := postStop(t, s.url+"/api/teams/"+id+"/stop", nil)
	stopped := map[string]string{}
	if list, _ := got["stopped"].([]any); code == http.StatusAccepted {
		for _, v := range list {
			m, _ := v.(map[string]any)
			stopped[m["member"].(string)], _ = m["run_id"].(string)
		}
	}
	if code != http.StatusAccepted || got["team"] != id || stopped["lead"] != leadRun || stopped["bob"] == "" || len(stopped) != 2 {
		t.Fatalf("stop the team = %d %v, want 202 with bob's run and the lead's %s", code, got, leadRun)
	}
	eventstest.Eventually(t, "both model requests cancelled", func() bool { return api.cancelled.Load() == 2 })
	for seat, run := range stopped {
		var r stoppedRun
		eventstest.Eventually(t, seat+"'s run stopped", func() bool {
			r = stoppedRun{}
			return getJSON(t, s.url+"/api/runs/"+run, &r) == 200 && r.Status == "stopped"
		})
		if r.Reason != "stopped_by_owner" || r.StoppedBy != "api" {
			t.Errorf("%s's run = %+v, want stopped by the owner through the api", seat, r)
		}
	}
	// Held: bob's report is in the lead's mailbox, but no turn starts.
	var tv teamView
	eventstest.Eventually(t, "bob's report in the lead's mailbox", func() bool {
		tv = teamView{}
		getJSON(t, s.url+"/api/teams/"+id, &tv)
		for _, m := range tv.Mail {
			if m.From == "bob" && m.Type == "result" && strings.Contains(m.Content, "The owner stopped my run") {
				return true
			}
		}
		return false
	})
	calls := map[string]int32{"lead": api.calls["lead"].Load(), "bob": api.calls["bob"].Load()}
	time.Sleep(2 * time.Second) // bounded: anything that would start would have by now
	for seat, n := range calls {
		if now := api.calls[seat].Load(); now != n {
			t.Errorf("%s's model was called %d more times after the stop", seat, now-n)
		}
	}
	if code, body := postStop(t, s.url+"/api/teams/"+id+"/stop", nil); code != http.StatusConflict || errCode(body) != "nothing_running" {
		t.Fatalf("a second stop = %d %v, want 409 nothing_running", code, body)
	}
	log, _ := connectLog(t, natsURL)
	envs, err := log.ReadAll(t.Context(), events.Team(id).Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var halts []*events.TeamStopRequested
	for _, env := range envs {
		if e, _ := env.Decode(); e != nil {
			if h, ok := e.(*events.TeamStopRequested); ok {
				halts = append(halts, h)
			}
		}
	}
	if len(halts) != 1 || halts[0].By != "api" || halts[0].LeadMessages == 0 {
		t.Errorf("team_stop_requested = %+v, want one, by api, at the lead's run", halts)
	}
	for _, conv := range []string{bobConv, id} {
		envs, _ := log.ReadAll(t.Context(), events.Conv(conv).Filter(), 0)
		n := 0
		for _, env := range envs {
			if env.Type == events.TypeRunStopRequested {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: %d run_stop_requested, want 1", conv, n)
		}
	}

	// The owner writes to the lead: the team is let go, and the lead's
	// next turn reads bob's report, framed.
	postJSON(t, s.url+"/api/inbound", map[string]any{"text": "Carry on.", "conversation_id": id})
	waitConv(t, s.url, id, "the lead to read bob's report", func(c convView) bool {
		if !settled(c) {
			return false
		}
		for _, m := range c.History {
			if m.Role == "user" && strings.HasPrefix(m.Text, "[Team events") && strings.Contains(m.Text, "The owner stopped my run") {
				return true
			}
		}
		return false
	})
	if n := api.calls["bob"].Load(); n != calls["bob"] {
		t.Errorf("bob's model was called again (%d)", n-calls["bob"])
	}
	s.stop(t)
}
