package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/projections"
)

// runViews knows one run, of a teammate's conversation.
type runViews struct{ fakeViews }

func (runViews) Run(_ context.Context, id string) (projections.Run, error) {
	if id != "run1" {
		return projections.Run{}, web.ErrNotFound
	}
	return projections.Run{RunSummary: projections.RunSummary{RunID: id, Conversation: "mate", Agent: "dev"}}, nil
}

// GET /api/runs/{id}/recorded answers what a replay of a teammate's run
// reads on a stopped home (events.Recorded): its conversation, its team's
// board and mailboxes and its lead's conversation, in stream order, and
// nothing of another conversation; without the token it is refused, and
// web.Client.RecordedRun reads the same events.
func TestRecordedRoute(t *testing.T) {
	_, log := eventstest.Start(t)
	put := func(scope events.Scope, e events.Event) uint64 {
		t.Helper()
		stored, err := log.Append(t.Context(), scope, events.Any, events.MustNew(e))
		if err != nil {
			t.Fatal(err)
		}
		return stored[0].Seq
	}
	msg := &events.MessageReceived{Text: "hi"}
	lead := put(events.Conv("lead"), &events.ConversationOpened{Agent: "master", Channel: "web"})
	put(events.Conv("other"), &events.ConversationOpened{Agent: "master", Channel: "web"})
	mate := put(events.Conv("mate"), &events.ConversationOpened{Agent: "dev", Channel: "team", Team: "lead"})
	board := put(events.Team("lead"), msg)
	mail := put(events.Mail("lead", "dev"), msg)
	put(events.Conv("other"), msg)
	mate2 := put(events.Conv("mate"), msg)
	want := []uint64{lead, mate, board, mail, mate2}

	const token = "recorded-route-token"
	srv := httptest.NewServer(web.New(web.Config{Log: log, Views: runViews{}, AuditKey: testAuditKey, AuthToken: token,
		Health: func(context.Context) (bool, any) { return true, nil }}))
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/runs/run1/recorded", nil)
	if code, _, _ := do(t, req); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", code)
	}
	if _, _, err := (web.Client{URL: srv.URL}).RecordedRun(t.Context(), "run1"); err == nil {
		t.Error("RecordedRun without the token succeeded")
	}
	if _, _, err := (web.Client{URL: srv.URL, Token: token}).RecordedRun(t.Context(), "run9"); err == nil {
		t.Error("RecordedRun of an unknown run succeeded")
	}

	agent, envs, err := web.Client{URL: srv.URL, Token: token}.RecordedRun(t.Context(), "run1")
	if err != nil {
		t.Fatal(err)
	}
	if agent != "dev" {
		t.Errorf("agent = %q, want dev", agent)
	}
	local, err := events.Recorded(t.Context(), log, "mate")
	if err != nil {
		t.Fatal(err)
	}
	var got, read []uint64
	for i, env := range envs {
		got = append(got, env.Seq)
		if i < len(local) && (env.Subject != local[i].Subject || env.ID != local[i].ID || string(env.Data) != string(local[i].Data)) {
			t.Errorf("event %d over the API = %s %s %s, read locally %s %s %s", i, env.Subject, env.ID, env.Data, local[i].Subject, local[i].ID, local[i].Data)
		}
	}
	for _, env := range local {
		read = append(read, env.Seq)
	}
	if !slices.Equal(got, want) || !slices.Equal(read, want) {
		t.Errorf("the route answered sequences %v, events.Recorded reads %v, want %v", got, read, want)
	}
}
