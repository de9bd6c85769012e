package main

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/my-agent-crew/crew/events/eventstest"
)

const searchScript = `
- text: "Groceries noted: oats and bananas."
- text: "Bleed the radiator with the small key, then check the valve."
`

// The owner's search in the browser: type three words in the sidebar's
// box, see the hit grouped and marked, open it, and land on the message
// highlighted; screenshots at 1280 and 375 px.
func TestBrowserSearchFromSidebarLandsOnTheMessage(t *testing.T) {
	browser := newBrowser(t)
	home := initHome(t)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+writeScript(t, searchScript))
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "remember oats and bananas for Saturday"})
	id := acc["conversation_id"].(string)
	waitConv(t, s.url, id, "idle", settled)
	postJSON(t, s.url+"/api/inbound", map[string]any{"text": "the radiator valve in the bedroom keeps hissing", "conversation_id": id})
	waitConv(t, s.url, id, "idle", func(c convView) bool {
		return settled(c) && len(c.History) > 0 && strings.Contains(c.History[len(c.History)-1].Text, "radiator")
	})
	do(t, browser, chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="search-box"]`)))
	// The index catches up in the background: search until it has.
	eventstest.Eventually(t, "the hit on /search", func() bool {
		do(t, browser,
			chromedp.Navigate(s.url+"/"),
			chromedp.SendKeys(chromedp.CSS(`[data-testid="search-box"]`), "radiator valve hissing\n"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="search-form"]`)),
		)
		n, _ := chromedp.Run(browser, chromedp.Evaluate[int](`document.querySelectorAll('[data-kind="message"] [data-testid="search-hit"]').length`))
		return n == 1
	})
	if mark := text(t, browser, `[data-kind="message"] mark`); !strings.EqualFold(mark, "radiator") && !strings.EqualFold(mark, "valve") && !strings.EqualFold(mark, "hissing") {
		t.Errorf("marked %q", mark)
	}
	fitsPhone(t, browser)
	shot(t, browser, "search")
	do(t, browser,
		chromedp.Click(chromedp.CSS(`[data-kind="message"] [data-testid="search-hit-link"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#hit[data-hit="true"]`)),
	)
	if got := text(t, browser, `#hit .text`); !strings.Contains(got, "radiator valve in the bedroom") {
		t.Errorf("landed on %q", got)
	}
	inView, err := chromedp.Run(browser, chromedp.Evaluate[bool](`(() => { const r = document.getElementById('hit').getBoundingClientRect(); return r.top >= 0 && r.top < window.innerHeight; })()`))
	if err != nil || !inView {
		t.Errorf("the hit is not in view (%v)", err)
	}
	shot(t, browser, "search-hit")
	s.stop(t)
}
