package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// R-LOOP-7, R-LOOP-4(b) on a real crew serve and its chat page: a reply
// whose stream breaks (a 503 inside the stream) after its words reached
// the chat keeps them, marked interrupted with the retry that followed,
// and the retried reply follows; the live copy of the broken text goes.
func TestBrowserShownTextKeptInterruptedOnRetry(t *testing.T) {
	ctx := newBrowser(t)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	// The words are sent once the chat page is open: live deltas are for
	// whoever is watching (the redactor shows whole words at once now).
	watching := make(chan struct{})
	var watchOnce sync.Once
	watch := func() { watchOnce.Do(func() { close(watching) }) }
	t.Cleanup(watch)
	var mu sync.Mutex
	n := 0
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if i == 0 {
			select {
			case <-watching:
			case <-time.After(20 * time.Second):
			}
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Tôi đang viết câu trả lời\"}}]}\n\n")
			w.(http.Flusher).Flush()
			select { // until the page shows the words, at most 20 s
			case <-release:
			case <-time.After(20 * time.Second):
			}
			fmt.Fprint(w, "data: {\"error\":{\"message\":\"upstream overloaded\",\"code\":503}}\n\n")
			return
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Xong rồi.\"},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(api.Close)
	home := initHome(t)
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+api.URL+"/v1")
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "viết đi"})
	id := acc["conversation_id"].(string)
	do(t, ctx, chromedp.Navigate(s.url+"/c/"+id))
	time.Sleep(time.Second) // the page's live feed connects after load
	watch()
	wait(t, ctx, s, `[data-testid="live-reply"]`)
	if got := text(t, ctx, `[data-testid="live-reply"]`); !strings.Contains(got, "Tôi đang viết") {
		t.Fatalf("live reply = %q", got)
	}
	free()
	waitConv(t, s.url, id, "answered after the retry", settled)
	wait(t, ctx, s, `[data-testid="msg-interrupted"]`)
	// The page settles: the interrupted text, then the reply, no live copy.
	var broken string
	var assistants int
	var liveGone bool
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		assistants = count(t, ctx, `[data-testid="msg-assistant"]`)
		liveGone, _ = chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const l = document.querySelector('[data-testid="live-reply"]'); return !l || l.hidden || l.textContent === ''; })()`))
		if assistants == 2 && liveGone {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	broken = text(t, ctx, `.msg-interrupted`)
	if !strings.Contains(broken, "Tôi đang viết câu trả lời") || !strings.Contains(broken, "interrupted — retried on openrouter:vendor/model") {
		t.Errorf("interrupted message = %q", broken)
	}
	if assistants != 2 || !liveGone {
		html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('chat').outerHTML`))
		t.Errorf("%d assistant messages (want the interrupted one and the reply), live copy gone %v:\n%s", assistants, liveGone, html)
	}
	if chat := text(t, ctx, `#chat`); !strings.Contains(chat, "Xong rồi.") || strings.Index(chat, "Xong rồi.") < strings.Index(chat, "Tôi đang viết") {
		t.Errorf("the reply after the retry does not follow the interrupted text: %q", chat)
	}
	// A reload shows the same: the state keeps it.
	page := getPage(t, s.url+"/c/"+id)
	if !strings.Contains(page, "Tôi đang viết câu trả lời") || !strings.Contains(page, `data-testid="msg-interrupted"`) {
		t.Errorf("the chat page after a reload lost the interrupted text")
	}
	s.stop(t)
}
