package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/gateways/web"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/team"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/projections/projectionstest"
)

// R-TEAM in the UI: a lead conversation's team page shows the members
// with WORK/IDLE, the board (status, owner, blockers, worktree), the mail
// timeline and the pending protocol requests; the lead's chat links to it
// and shows delivered team events as such, not as the owner's words; a
// todo_write call's checklist is on its card in the chat and on the run
// card.
func TestTeamPageAndChatShowTheTeam(t *testing.T) {
	ctx := t.Context()
	log, db, runner := projectionstest.Start(t)
	convs := loop.NewConvs(log, nil)
	rt := team.New(team.Config{Log: log, Convs: convs, Crew: anyAgent{t: t}})
	srv := httptest.NewServer(web.New(web.Config{
		Log: log, Views: fakeViews{}, Health: func(context.Context) (bool, any) { return true, nil }, Teams: rt,
		Pages: &web.Pages{DB: db, Location: time.UTC, Clock: time.Now},
	}))
	t.Cleanup(srv.Close)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	appendTo := func(conv string, evs ...events.Event) {
		t.Helper()
		c, _ := convs.Get(ctx, conv)
		stored, err := c.Append(ctx, func(*loop.State) ([]events.Event, error) { return evs, nil })
		if err != nil {
			t.Fatal(err)
		}
		runner.WaitFor(ctx, stored[len(stored)-1].Seq)
	}
	todo := json.RawMessage(`{"items":[{"text":"read the loader","done":true},{"text":"split config","done":false}]}`)
	appendTo("c1",
		&events.ConversationOpened{Agent: "master", Channel: "web"},
		&events.MessageReceived{Channel: "web", Text: "refactor"},
		&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"},
		&events.ModelCalled{RunID: "r1", Step: 1, Route: "a", Model: "m", ToolCalls: []events.ToolCallRequest{{ID: "t1", Name: "todo_write", Arguments: todo}}},
		&events.ToolCalled{RunID: "r1", Step: 1, CallID: "t1", Tool: "todo_write", Arguments: todo},
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "t1", Tool: "todo_write", Output: "Checklist: 1 of 2 done."},
		&events.ModelCalled{RunID: "r1", Step: 2, Route: "a", Model: "m", Text: "Team started."},
		&events.RunFinished{RunID: "r1", Status: events.RunDone})
	if code, _ := get("/c/c1/team"); code != 404 {
		t.Fatalf("a team page without a team: %d", code)
	}
	tm, _ := team.Open(ctx, log, "c1")
	tm.AppendBoard(ctx, func(*team.Board, *team.Mailboxes) ([]events.Event, error) {
		return []events.Event{
			&events.TeamConfirmed{ProposalID: "p1", Plan: "config and auth", Members: []events.TeamMember{{Name: "bob", Agent: "coder", Responsibility: "auth"}}},
			&events.TaskCreated{TaskID: "task_0000000a", Subject: "auth"}, &events.TaskCreated{TaskID: "task_0000000b", Subject: "tests"},
			&events.TaskUpdated{TaskID: "task_0000000b", AddBlockedBy: []string{"task_0000000a"}},
			&events.TaskWorktreeBound{TaskID: "task_0000000a", Name: "auth-refactor", Path: "/w/.worktrees/auth-refactor", Branch: "wt/auth-refactor"},
			&events.TaskClaimed{TaskID: "task_0000000a", Owner: "bob", How: "spawn"},
			&events.TeammateSpawned{Name: "bob", Agent: "coder", Conversation: team.MemberConversation("c1", "bob"), Responsibility: "auth", RequirePlan: true},
		}, nil
	})
	tm.Send(ctx, team.Lead, func(*team.Board, *team.Mailboxes) ([]events.Event, error) {
		return []events.Event{&events.MailSent{From: "bob", To: team.Lead, Type: events.MailPlanApproval, Content: "1. split auth", RequestID: "req_1", TaskID: "task_0000000a", WorkVersion: 1}}, nil
	})
	appendTo("c1", &events.MessageReceived{Channel: team.Channel, From: team.Channel, Text: "bob (plan_approval_request): 1. split auth",
		Team: &events.TeamDelivery{Through: 1, Items: []events.TeamItem{{From: "bob", Type: events.MailPlanApproval, Content: "1. split auth", RequestID: "req_1"}}}})

	code, page := get("/c/c1/team")
	if code != 200 {
		t.Fatalf("team page: %d\n%s", code, page)
	}
	for _, want := range []string{
		`data-testid="team-member" data-name="bob" data-state="IDLE"`, `data-testid="member-plan">plan pending`,
		`data-testid="team-task" data-status="in_progress"`, `data-testid="task-owner" data-label="Owner">bob`, `data-testid="task-worktree" data-label="Worktree">auth-refactor`,
		"task_0000000a</td>", `data-testid="team-request"`, "req_1", `data-type="plan_approval_request"`, "config and auth",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("team page lacks %s", want)
		}
	}
	_, chat := get("/c/c1")
	for _, want := range []string{`data-testid="team-link"`, `href="/c/c1/team"`, `data-testid="msg-team"`, "[Team events",
		`data-testid="todo-item" data-done="true"`, "read the loader", `data-done="false"`} {
		if !strings.Contains(chat, want) {
			t.Errorf("chat lacks %s", want)
		}
	}
	if strings.Count(chat, `data-testid="msg-user"`) != 1 {
		t.Errorf("team events shown as the owner's message")
	}
	_, runs := get("/c/c1/runs")
	if !strings.Contains(runs, `data-testid="todo-item" data-done="false"`) || !strings.Contains(runs, "split config") {
		t.Errorf("the run card lacks the checklist")
	}
	var api struct {
		Tasks []struct{ ID, Status string } `json:"tasks"`
	}
	if code, body := get("/api/teams/c1"); code != 200 || json.Unmarshal([]byte(body), &api) != nil || len(api.Tasks) != 2 {
		t.Errorf("GET /api/teams/c1 = %d %s", code, body)
	}
}

// anyAgent is a crew with every agent asked for, each in a workspace of
// its own.
type anyAgent struct {
	loop.Agents
	t *testing.T
}

func (c anyAgent) Agent(id string) (loop.Agent, bool) {
	return loop.Agent{ID: id, Workspace: c.t.TempDir()}, true
}

// seenFresh is the projections' freshness, recording the sequences a
// reader waited for.
type seenFresh struct {
	projections.Freshness
	waited []uint64
}

func (f *seenFresh) WaitFor(ctx context.Context, seq uint64) error {
	f.waited = append(f.waited, seq)
	return f.Freshness.WaitFor(ctx, seq)
}

// The team page's live feed starts after the log's last sequence when the
// page was read: the page waits until the projections it renders from have
// applied that sequence, or a change stored just before (the lead's run
// stopped) is neither on the page nor ever announced by its feed (seen in
// Chromium: Stop the team stayed on a stopped team).
func TestTeamPageReadsProjectionsAsOfItsFeedStart(t *testing.T) {
	ctx := t.Context()
	log, db, runner := projectionstest.Start(t)
	convs := loop.NewConvs(log, nil)
	rt := team.New(team.Config{Log: log, Convs: convs, Crew: anyAgent{t: t}})
	fresh := &seenFresh{Freshness: runner}
	srv := httptest.NewServer(web.New(web.Config{
		Log: log, Views: fakeViews{}, Health: func(context.Context) (bool, any) { return true, nil }, Teams: rt,
		Pages: &web.Pages{DB: db, Location: time.UTC, Clock: time.Now, Fresh: fresh},
	}))
	t.Cleanup(srv.Close)
	c, _ := convs.Get(ctx, "c1")
	stored, err := c.Append(ctx, func(*loop.State) ([]events.Event, error) {
		return []events.Event{&events.ConversationOpened{Agent: "master", Channel: "web"}, &events.MessageReceived{Channel: "web", Text: "refactor"}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	runner.WaitFor(ctx, stored[len(stored)-1].Seq)
	tm, _ := team.Open(ctx, log, "c1")
	tm.AppendBoard(ctx, func(*team.Board, *team.Mailboxes) ([]events.Event, error) {
		return []events.Event{&events.TeamConfirmed{ProposalID: "p1", Plan: "auth", Members: []events.TeamMember{{Name: "bob", Agent: "coder"}}}}, nil
	})
	last, err := log.Last(ctx, events.Root+".>")
	if err != nil {
		t.Fatal(err)
	}
	fresh.waited = nil
	resp, err := http.Get(srv.URL + "/c/c1/team")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	after := fmt.Sprintf(`data-after="%d"`, last)
	if resp.StatusCode != 200 || !strings.Contains(string(page), after) {
		t.Fatalf("team page %d lacks %s:\n%s", resp.StatusCode, after, page)
	}
	waited := false
	for _, seq := range fresh.waited {
		waited = waited || seq >= last
	}
	if !waited {
		t.Errorf("the page was rendered without waiting for the projections to apply %d (waited for %v)", last, fresh.waited)
	}
}
