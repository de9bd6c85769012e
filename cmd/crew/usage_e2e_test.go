package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// R-LOOP-5 in the browser: two agents' model calls with known and unknown
// costs reach /api/usage and the /usage page, whose plot is drawn by the
// server (one bar per agent and day) and which lists the top
// conversations and the calls whose cost is unknown.
func TestBrowserUsagePage(t *testing.T) {
	ctx := newBrowser(t)
	home := initHome(t)
	useUTC(t, home)
	// One script for every agent, played in call order: master, the
	// coach, master again.
	script := writeScript(t, `
- text: "Planned your week."
  usage: {input: 1200, output: 300, cost_usd: 0.042}
- text: "Oats, two hours before."
  usage: {input: 800, output: 90, cost_usd: 0.0185}
- text: "Added the dentist."
  usage: {input: 1500, output: 120, cost_unknown: true}
`)
	putAgent(t, home, "health-coach", "name: Health coach\ntools: [progress_note]\n", "You are the owner's health coach.")
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+script)

	var convs []string
	for _, m := range []map[string]any{{"text": "plan my week"}, {"text": "breakfast?", "agent": "health-coach"}} {
		code, acc := postJSON(t, s.url+"/api/inbound", m)
		if code != 202 {
			t.Fatalf("inbound %v = %d %v", m, code, acc)
		}
		id := acc["conversation_id"].(string)
		waitConv(t, s.url, id, "answered", settled)
		convs = append(convs, id)
	}
	code, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "and the dentist", "conversation_id": convs[0]})
	if code != 202 {
		t.Fatalf("inbound = %d %v", code, acc)
	}
	waitConv(t, s.url, convs[0], "answered twice", func(c convView) bool { return settled(c) && len(c.History) == 4 })

	var rep struct {
		TotalUSD         float64 `json:"total_usd"`
		UnknownCostCalls int     `json:"unknown_cost_calls"`
		Groups           []struct {
			Key   string  `json:"key"`
			USD   float64 `json:"usd"`
			Calls int     `json:"calls"`
		} `json:"groups"`
	}
	if code := getJSON(t, s.url+"/api/usage?group_by=agent", &rep); code != 200 || math.Abs(rep.TotalUSD-0.0605) > 1e-9 || rep.UnknownCostCalls != 1 || len(rep.Groups) != 2 {
		t.Fatalf("/api/usage = %d %+v", code, rep)
	}

	do(t, ctx,
		chromedp.Navigate(s.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="usage-link"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="usage-link"]`)),
	)
	wait(t, ctx, s, `[data-testid="usage-chart"]`)
	if got := text(t, ctx, `[data-testid="usage-total"]`); got != "$0.0605" {
		t.Errorf("total shown = %q, want $0.0605", got)
	}
	if got := text(t, ctx, `[data-testid="usage-unknown"]`); !strings.HasPrefix(got, "1 ") {
		t.Errorf("unknown shown = %q", got)
	}
	if n := count(t, ctx, `[data-testid="usage-bar"]`); n != 2 {
		t.Errorf("%d bars, want one per agent today", n)
	}
	if n := count(t, ctx, `[data-testid="usage-conversations"] tbody tr`); n != 2 {
		t.Errorf("%d top conversations, want 2", n)
	}
	if legend := text(t, ctx, `[data-testid="usage-legend"]`); !strings.Contains(legend, "master") || !strings.Contains(legend, "health-coach") {
		t.Errorf("legend = %q", legend)
	}
	shot(t, ctx, "usage")
	fitsPhone(t, ctx)
	s.stop(t)
}

// R-X-5: kill -9 between a call's reservation and its settlement; after
// the restart the day's total is right: the interrupted call at its worst
// case (it may have gone out), the resumed call at its real cost, nothing
// counted twice, nothing left open; a second restart changes nothing.
func TestBudgetKill9BetweenReserveAndSettle(t *testing.T) {
	home := initHome(t)
	useUTC(t, home)
	script := writeScript(t, `
- text: "slow answer"
  delay: 3s
  usage: {input: 100, output: 20, cost_usd: 0.002}
`)
	appendFile(t, filepath.Join(home, "config.yaml"), "\nmodels:\n  \"fake:script:"+script+"\":\n    input_usd_per_mtok: 1\n    output_usd_per_mtok: 10\n    max_output_tokens: 1000\n")
	env := "MY_AGENT_ROUTES=fake:script:" + script
	s := startServe(t, home, env)
	type spent struct {
		USD  float64 `json:"usd"`
		Open []struct {
			USD float64 `json:"usd"`
		} `json:"open_reservations"`
	}
	code, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "take your time"})
	if code != 202 {
		t.Fatalf("inbound = %d %v", code, acc)
	}
	var b spent
	eventstest.Eventually(t, "the call's reservation", func() bool {
		b = spent{}
		return getJSON(t, s.url+"/api/budget", &b) == 200 && len(b.Open) == 1
	})
	reserved := b.Open[0].USD
	// 1,000 output tokens at $10/Mtok, plus the prompt at $1/Mtok: the
	// prompt's estimate counts the tool declarations too (some 16,000
	// tokens for a fresh home's master), so it is bounded, not pinned.
	if prompt := (reserved - 0.01) * 1e6; prompt < 1000 || prompt > 40000 {
		t.Fatalf("reserved $%v: want $0.01 for the output plus 1,000 to 40,000 prompt tokens at $1/Mtok (got %.0f)", reserved, prompt)
	}
	s.kill9(t)

	s = startServe(t, home, env)
	id := acc["conversation_id"].(string)
	waitConv(t, s.url, id, "answered after the restart", settled)
	eventstest.Eventually(t, "the resumed call settled", func() bool {
		b = spent{}
		return getJSON(t, s.url+"/api/budget", &b) == 200 && len(b.Open) == 0 && b.USD > reserved
	})
	if want := reserved + 0.002; math.Abs(b.USD-want) > 1e-9 {
		t.Errorf("today after the restart: $%v, want $%v (the interrupted worst case + the real cost)", b.USD, want)
	}
	s.stop(t)
	s = startServe(t, home, env)
	var again spent
	if getJSON(t, s.url+"/api/budget", &again); math.Abs(again.USD-b.USD) > 1e-9 || len(again.Open) != 0 {
		t.Errorf("after a second restart: %+v, want $%v and nothing open", again, b.USD)
	}
	s.stop(t)
}

// Issue 30 item 3 on a real crew serve: a reply that asks for tools is
// settled when the turn's next call is reserved (both in one stored
// message); a SIGKILL while that settlement waits — the turn paused on an
// approval right after the reply — loses nothing and charges nothing
// twice: the restart settles it at the cost the reply recorded, and the
// rest of the turn adds its own call once, across another restart.
func TestBudgetKill9WhileASettlementWaitsForTheNextCall(t *testing.T) {
	home := initHome(t)
	useUTC(t, home)
	script := writeScript(t, `
- tool_calls:
    - name: workspace_write
      arguments: {path: note.txt, content: "hello"}
  usage: {input: 100, output: 20, cost_usd: 0.002}
- text: "written"
  usage: {input: 120, output: 5, cost_usd: 0.003}
`)
	appendFile(t, filepath.Join(home, "config.yaml"), "\nmodels:\n  \"fake:script:"+script+"\":\n    input_usd_per_mtok: 1\n    output_usd_per_mtok: 10\n    max_output_tokens: 1000\n")
	env := "MY_AGENT_ROUTES=fake:script:" + script
	s := startServe(t, home, env)
	type spent struct {
		USD  float64 `json:"usd"`
		Open []any   `json:"open_reservations"`
	}
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "write a note"})
	id := acc["conversation_id"].(string)
	waitConv(t, s.url, id, "asking to write", func(c convView) bool { return len(c.PendingApprovals) == 1 })
	s.kill9(t)
	s = startServe(t, home, env)
	var b spent
	if getJSON(t, s.url+"/api/budget", &b); math.Abs(b.USD-0.002) > 1e-9 || len(b.Open) != 0 {
		t.Fatalf("after the restart: %+v, want the reply's $0.002 and nothing open", b)
	}
	c := waitConv(t, s.url, id, "still asking", func(c convView) bool { return len(c.PendingApprovals) == 1 })
	postJSON(t, s.url+"/api/approvals/"+c.PendingApprovals[0].ID, map[string]any{"decision": "approve"})
	waitConv(t, s.url, id, "answered", settled)
	eventstest.Eventually(t, "the second call settled", func() bool {
		b = spent{}
		return getJSON(t, s.url+"/api/budget", &b) == 200 && len(b.Open) == 0 && b.USD > 0.004
	})
	if math.Abs(b.USD-0.005) > 1e-9 {
		t.Errorf("after the turn: $%v, want $0.005", b.USD)
	}
	s.stop(t)
	s = startServe(t, home, env)
	var again spent
	if getJSON(t, s.url+"/api/budget", &again); math.Abs(again.USD-0.005) > 1e-9 || len(again.Open) != 0 {
		t.Errorf("after a second restart: %+v, want $0.005 and nothing open", again)
	}
	s.stop(t)
}
