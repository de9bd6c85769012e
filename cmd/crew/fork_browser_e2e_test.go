package main

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// Three steps on the original route: two workspace listings, then words.
const forkOrigScript = `
- tool_calls:
    - name: workspace_list
      arguments: {path: "."}
- tool_calls:
    - name: workspace_list
      arguments: {path: "."}
- text: "Listed twice on the original route."
`

// R-X-2 in the browser: on the runs page, step 2's "Fork from here" with a
// route typed in opens the fork's runs page, which names its origin; the
// origin's card then lists the fork.
func TestBrowserForkFromRunsPage(t *testing.T) {
	browser := newBrowser(t)
	home := initHome(t)
	forkRoute := "fake:script:" + writeScript(t, "- text: \"Answered on the fork's route.\"\n")
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+writeScript(t, forkOrigScript))
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "list my workspace twice"})
	id := acc["conversation_id"].(string)
	waitConv(t, s.url, id, "idle", settled)
	run := finishedRuns(t, s.url, id, 1)[0].RunID
	step2 := `[data-run-id="` + run + `"] [data-step="2"]`
	do(t, browser,
		chromedp.Navigate(s.url+"/c/"+id+"/runs"),
		chromedp.WaitVisible(chromedp.CSS(step2+` [data-testid="fork-form"]`)),
		chromedp.SendKeys(chromedp.CSS(step2+` [data-testid="fork-route"]`), forkRoute),
	)
	shot(t, browser, "runs-fork")
	do(t, browser,
		chromedp.Click(chromedp.CSS(step2+` [data-testid="fork-button"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run-forked-from"]`)),
	)
	if from := text(t, browser, `[data-testid="run-forked-from"]`); !strings.Contains(from, run) || !strings.Contains(from, "step 2") {
		t.Errorf("fork's card says %q, want its origin run %s at step 2", from, run)
	}
	// The fork's run answers on its route (the page shows it once the
	// worker has made the call: reload until then).
	var routes string
	eventstest.Eventually(t, "the fork's model call on its route", func() bool {
		do(t, browser, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`[data-testid="run"]`)))
		routes, _ = chromedp.Run(browser, chromedp.Evaluate[string](`[...document.querySelectorAll('[data-testid="mc-route"]')].map(e => e.textContent).join(" ")`))
		return strings.Contains(routes, forkRoute)
	})
	if strings.Count(routes, "fake:script:") != 1 {
		t.Errorf("the fork's model calls were on %q, want %s", routes, forkRoute)
	}
	do(t, browser,
		chromedp.Click(chromedp.CSS(`[data-testid="fork-origin-link"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-run-id="`+run+`"] [data-testid="fork-link"]`)),
	)
	if link := text(t, browser, `[data-run-id="`+run+`"] [data-testid="run-forks"]`); !strings.Contains(link, "step 2") || !strings.Contains(link, forkRoute) {
		t.Errorf("origin's card lists %q, want the fork at step 2 on its route", link)
	}
	s.stop(t)
}
