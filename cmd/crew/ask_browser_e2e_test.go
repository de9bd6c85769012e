package main

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/my-agent-crew/crew/events/eventstest"
)

const askScript = `
- tool_calls:
    - name: ask_user
      arguments: {question: "Which day?", choices: [Monday, Tuesday]}
- text: "Booked for the day you chose."
- tool_calls:
    - name: ask_user
      arguments: {question: "How many people?"}
- text: "Table set."
- tool_calls:
    - name: ask_user
      arguments: {question: "Window seat?", choices: ["Yes", "No"]}
- text: "Noted."
`

// Seed 000 §2.4 in the browser: the chat shows an answer box for the
// pending question (its choices as buttons, a text field); a choice answers
// it and the box is replaced by the answer card, in this tab and in
// another one (live); a typed answer sent with Enter answers the next; one
// answered elsewhere (the API) replaces the box live.
func TestBrowserQuestionAnswerBox(t *testing.T) {
	browser := newBrowser(t)
	home := initHome(t)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+writeScript(t, askScript))
	do(t, browser,
		chromedp.Navigate(s.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="composer-text"]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="composer-text"]`), "book a table"),
		chromedp.Click(chromedp.CSS(`[data-testid="composer-send"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="question-bar"]`)),
	)
	if q := text(t, browser, `[data-testid="question-text"]`); q != "Which day?" {
		t.Errorf("question = %q", q)
	}
	choices, _ := chromedp.Run(browser, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="question-choice"]')].map(b => b.textContent)`))
	if strings.Join(choices, ",") != "Monday,Tuesday" {
		t.Errorf("choices = %q", choices)
	}
	if n, _ := chromedp.Run(browser, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="tool-card"]').length`)); n != 0 {
		t.Errorf("%d tool cards beside the question box, want none (the box is the call)", n)
	}
	if st, _ := chromedp.Run(browser, chromedp.Evaluate[string](`document.getElementById('chat').dataset.status`)); st != "awaiting_answer" {
		t.Errorf("chat status = %q, want awaiting_answer", st)
	}
	here, err := chromedp.Run(browser, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	other := newTab(t, browser)
	do(t, other, chromedp.Navigate(here), chromedp.WaitVisible(chromedp.CSS(`[data-testid="question-bar"]`)))
	shot(t, browser, "question")

	do(t, browser,
		chromedp.Click(chromedp.CSS(`[data-testid="question-choice"]:nth-of-type(2)`)),
		chromedp.WaitNotPresent(chromedp.CSS(`[data-testid="question-bar"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="question-card-answer"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="msg-assistant"]`)),
	)
	if got := text(t, browser, `[data-testid="question-card-answer"]`); got != "Answered: Tuesday" {
		t.Errorf("answer card = %q", got)
	}
	do(t, other, chromedp.WaitNotPresent(chromedp.CSS(`[data-testid="question-bar"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="question-card-answer"]`)))

	// A typed answer, sent with Enter.
	do(t, browser,
		chromedp.SendKeys(chromedp.CSS(`[data-testid="composer-text"]`), "and another question\n"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="question-bar"]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="question-answer-text"]`), "four of us\n"),
		chromedp.WaitNotPresent(chromedp.CSS(`[data-testid="question-bar"]`)),
	)
	eventstest.Eventually(t, "the typed answer's card", func() bool {
		got, _ := chromedp.Run(browser, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="question-card-answer"]')].map(e => e.textContent)`))
		return len(got) == 2 && got[1] == "Answered: four of us"
	})

	// Answered elsewhere: the box in both tabs is replaced live.
	do(t, browser,
		chromedp.SendKeys(chromedp.CSS(`[data-testid="composer-text"]`), "one more\n"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="question-bar"]`)),
	)
	do(t, other, chromedp.WaitVisible(chromedp.CSS(`[data-testid="question-bar"]`)))
	id, _ := chromedp.Run(browser, chromedp.Evaluate[string](`document.querySelector('[data-testid="question-bar"]').dataset.questionId`))
	if code, body := postJSON(t, s.url+"/api/questions/"+id, map[string]any{"answer": "No"}); code != 200 {
		t.Fatalf("answer over the API = %d %v", code, body)
	}
	do(t, browser, chromedp.WaitNotPresent(chromedp.CSS(`[data-testid="question-bar"]`)))
	do(t, other, chromedp.WaitNotPresent(chromedp.CSS(`[data-testid="question-bar"]`)))
	eventstest.Eventually(t, "the third answer card", func() bool {
		got, _ := chromedp.Run(other, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="question-card-answer"]')].map(e => e.textContent)`))
		return len(got) == 3 && got[2] == "Answered: No"
	})
	shot(t, browser, "question-answered")
	s.stop(t)
}
