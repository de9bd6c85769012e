package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// liveTeamAPI plays a lead that spawns bob and a bob that waits, inside
// his turn, for the test to let him go on; the lead's turn that reads
// bob's report thinks until it is stopped.
type liveTeamAPI struct {
	goOn      chan struct{}
	once      sync.Once
	leadAfter atomic.Int32 // the lead's calls after it read its team
	cancelled atomic.Int32
}

func (a *liveTeamAPI) release() { a.once.Do(func() { close(a.goOn) }) }

func (a *liveTeamAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q, err := parseBoardRequest(r)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var text string
	var calls []boardCall
	task := ""
	if m := boardAssigned.FindStringSubmatch(q.all); m != nil {
		task = m[1]
	}
	switch {
	case q.seat != "lead" && q.count("list_tasks") == 0:
		calls = []boardCall{{"list_tasks", map[string]any{}}}
	case q.seat != "lead" && q.count("send_message") == 0:
		select {
		case <-a.goOn:
		case <-r.Context().Done():
			return
		}
		calls = []boardCall{{"send_message", map[string]any{"to": "lead", "content": "auth: half-way, the token check is next"}}}
	case q.seat != "lead" && q.count("complete_task") == 0:
		calls = []boardCall{{"complete_task", map[string]any{"task_id": task, "result": "Auth refactored; interfaces kept."}}}
	case q.seat != "lead":
		text = "bob: done."
	case strings.Contains(q.last, "Have bob refactor auth"):
		calls = []boardCall{{"propose_team", map[string]any{"plan": "bob on auth",
			"members": []map[string]string{{"name": "bob", "agent": "coder", "responsibility": "auth"}}}}}
	case strings.HasPrefix(q.last, "The owner confirmed"):
		calls = []boardCall{{"create_task", map[string]any{"subject": "auth"}}}
	case strings.HasPrefix(q.last, "Created task_"):
		calls = []boardCall{{"spawn_teammate", map[string]any{"name": "bob", "task_id": e2eCreated.FindStringSubmatch(q.all)[1]}}}
	case strings.Contains(q.last, "[Team events"):
		a.leadAfter.Add(1)
		select { // thinking, until the owner stops the team
		case <-r.Context().Done():
			a.cancelled.Add(1)
		case <-time.After(60 * time.Second):
		}
		return
	default:
		text = "The team is working."
	}
	streamReply(w, 0, text, calls)
}

// R-TEAM, R-WEB in Chromium: the team page is live — bob's mail, his task
// completed and his WORK → IDLE reach the open page from
// /api/teams/{id}/stream without a reload — and "Stop the team" stops the
// lead's turn that reads bob's report (the model's request cancelled, the
// run stopped by web), after which the control goes; at 1280 and 375 px.
func TestBrowserTeamPageLiveAndStop(t *testing.T) {
	ctx := newBrowser(t)
	api := &liveTeamAPI{goOn: make(chan struct{})}
	defer api.release()
	srv := httptest.NewServer(api)
	defer srv.Close()
	home := initHome(t)
	putAgent(t, home, "coder", "name: Coder\ndescription: writes code\nroutes: [fake:echo]\ntools: [workspace_read, workspace_list]\n", "You write code.")
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/good", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+srv.URL+"/v1")
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "Have bob refactor auth."})
	id := acc["conversation_id"].(string)
	c := waitConv(t, s.url, id, "the proposal's card", func(c convView) bool { return c.Status == "awaiting_approval" })
	postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"})
	eventstest.Eventually(t, "bob working", func() bool {
		var tv teamView
		return getJSON(t, s.url+"/api/teams/"+id, &tv) == 200 && len(tv.Members) == 1 && tv.Members[0].State == "WORK"
	})

	bob := `[data-testid="team-member"][data-name="bob"]`
	do(t, ctx,
		chromedp.Navigate(s.url+"/c/"+id+"/team"),
		chromedp.WaitVisible(chromedp.CSS(bob+`[data-state="WORK"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="team-task"][data-status="in_progress"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="team-stop-button"]`)),
		chromedp.Evaluate[chromedp.Void](`window.crewNoReload = true`),
	)
	api.release()
	do(t, ctx,
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="team-mail-item"][data-type="message"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="team-task"][data-status="completed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="team-mail-item"][data-type="idle_notification"]`)),
		chromedp.WaitVisible(chromedp.CSS(bob+`[data-state="IDLE"]`)),
	)
	if kept, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.crewNoReload === true`)); !kept {
		t.Fatal("the team page was reloaded; its parts should have been swapped in live")
	}
	if got := text(t, ctx, `[data-testid="team-mail-item"][data-type="message"]`); !strings.Contains(got, "auth: half-way") {
		t.Errorf("bob's mail on the page = %q", got)
	}
	if got := text(t, ctx, `[data-testid="task-result"]`); !strings.Contains(got, "Auth refactored") {
		t.Errorf("the task's result on the page = %q", got)
	}
	// The lead reads bob's report and thinks: Stop the team stops it.
	eventstest.Eventually(t, "the lead reading its team", func() bool { return api.leadAfter.Load() == 1 })
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="team-stop-button"]`)))
	fitsPhone(t, ctx)
	shot(t, ctx, "team")
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`[data-testid="team-stop-button"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="team-live"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`[data-testid="team-stop-button"]`)),
	)
	eventstest.Eventually(t, "the lead's model request cancelled", func() bool { return api.cancelled.Load() == 1 })
	c = waitConv(t, s.url, id, "the lead's run stopped", func(c convView) bool { return c.Status == "stopped" })
	var run stoppedRun
	getJSON(t, s.url+"/api/runs/"+c.LastRunID, &run)
	if run.Status != "stopped" || run.StoppedBy != "web" {
		t.Errorf("the lead's run = %+v, want stopped by web", run)
	}
	if n := api.leadAfter.Load(); n != 1 {
		t.Errorf("the lead's model was called %d times after reading its team, want 1", n)
	}
	s.stop(t)
}
