package main

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// Issue 27 in real Chromium: the Stop button shows beside the composer
// while a run streams, Esc in the composer stops it, the button goes, the
// streamed text stays marked stopped, and the run is stopped by web.
func TestBrowserStopWithEsc(t *testing.T) {
	ctx := newBrowser(t)
	home := initHome(t)
	model := &hangingModel{delay: 2 * time.Second}
	s := startServe(t, home, model.env(t)...)
	do(t, ctx, chromedp.Navigate(s.url+"/"))
	if n := count(t, ctx, `[data-testid="stop-button"]:not([hidden])`); n != 0 {
		t.Fatalf("a Stop button before any run")
	}
	send(t, ctx, s, "write me a long story")
	wait(t, ctx, s, `[data-testid="working"]`)
	wait(t, ctx, s, `[data-testid="stop-button"]:not([hidden])`)
	waitJS(t, ctx, s, "the words streaming and Stop shown", `(document.querySelector('[data-testid="live-reply"]')?.textContent || '').startsWith('Half a sentence')
		&& !!document.querySelector('[data-testid="stop-button"]:not([hidden])')`)
	shot(t, ctx, "stop-streaming")
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`[data-testid="composer-text"]`), kb.Escape))
	waitJS(t, ctx, s, "the run stopped, Stop gone, the text kept", `!!document.querySelector('[data-testid="chat"][data-status="stopped"]')
		&& !document.querySelector('[data-testid="stop-button"]:not([hidden])')
		&& !!document.querySelector('[data-testid="msg-assistant"][data-stopped] [data-testid="stopped-label"]')`)
	// Read in the page, not by node id: the chat may re-render between
	// a query and the read of the node it found.
	waitJS(t, ctx, s, "the stopped reply keeps its words", `(document.querySelector('[data-testid="msg-assistant"][data-stopped]')?.textContent || '').includes('Half a sentence')`)
	waitJS(t, ctx, s, "the run's ending says who stopped it", `(document.querySelector('[data-testid="run-ending-text"]')?.textContent || '').includes('Stopped by you (web)')`)
	shot(t, ctx, "stopped")
	if n := model.requests.Load(); n != 1 {
		t.Errorf("the model was asked %d times", n)
	}
	s.stop(t)
}
