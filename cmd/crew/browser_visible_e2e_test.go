package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Browser tests of issue 10 items 8 and 10: failures are visible, queued
// messages acknowledged, the layout keeps the banner, the title and the
// composer in sight, approvals read as what would run.

// failingModel is an OpenAI-compatible server that answers by the end of
// the owner's last message: "fail" gets OpenRouter's 401, "long" eighty
// lines (so the chat scrolls), "slow" its answer once hold is closed (after
// two seconds when there is no hold), and anything else "ok".
type failingModel struct {
	hold <-chan struct{}
}

func (m failingModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	users := req.userMessages()
	last := ""
	if len(users) > 0 {
		last = strings.TrimSpace(users[len(users)-1])
	}
	if strings.HasSuffix(last, "fail") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"No auth credentials found","code":401}}`)
		return
	}
	reply := "ok"
	switch {
	case strings.HasSuffix(last, "long"):
		var b strings.Builder
		for i := 1; i <= 80; i++ {
			fmt.Fprintf(&b, "Line %d of a long answer.\n\n", i)
		}
		reply = b.String()
	case strings.HasSuffix(last, "slow"):
		var wait <-chan time.Time
		if m.hold == nil {
			wait = time.After(2 * time.Second)
		}
		select {
		case <-m.hold: // nil without a hold: never ready
		case <-wait:
		case <-time.After(time.Minute): // a bound, should the test never release it
		case <-r.Context().Done():
			return
		}
		reply = "slow done"
	}
	w.Header().Set("Content-Type", "text/event-stream")
	b, _ := json.Marshal(reply)
	fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"content":%s},"finish_reason":"stop"}]}`+"\n\n", b)
	fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"cost":0.0001}}`+"\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func startFailingModel(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(failingModel{})
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// startHeldModel is startFailingModel whose "slow" answers wait for
// release, so a test can act while a turn runs however loaded the machine.
func startHeldModel(t *testing.T) (url string, release func()) {
	t.Helper()
	hold := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(hold) }) }
	srv := httptest.NewServer(failingModel{hold: hold})
	t.Cleanup(func() { release(); srv.Close() })
	return srv.URL + "/v1", release
}

func send(t *testing.T, ctx context.Context, s *server, msg string) {
	t.Helper()
	wait(t, ctx, s, `[data-testid="composer-text"]`)
	do(t, ctx,
		chromedp.SendKeys(chromedp.CSS(`[data-testid="composer-text"]`), msg),
		chromedp.Click(chromedp.CSS(`[data-testid="composer-send"]`)),
	)
}

// rect is an element's box in the viewport.
type rect struct {
	Top, Bottom, Left, Right float64
	// Hit says the element (or one inside it) is what the browser finds at
	// its centre: nothing lies over it.
	Hit bool
}

func rectOf(t *testing.T, ctx context.Context, sel string) rect {
	t.Helper()
	js := `(() => { const e = document.querySelector(` + jsonText(sel) + `); if (!e) return null;
		const r = e.getBoundingClientRect(); const h = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
		return {Top: r.top, Bottom: r.bottom, Left: r.left, Right: r.right, Hit: !!h && (h === e || e.contains(h))}; })()`
	r, err := chromedp.Run(ctx, chromedp.Evaluate[*rect](js))
	if err != nil || r == nil {
		t.Fatalf("rect of %s: %v (no such element?)", sel, err)
	}
	return *r
}

// inView fails unless sel lies wholly inside the viewport, uncovered.
func inView(t *testing.T, ctx context.Context, sel string) rect {
	t.Helper()
	r := rectOf(t, ctx, sel)
	w, _ := chromedp.Run(ctx, chromedp.Evaluate[float64](`window.innerWidth`))
	h, _ := chromedp.Run(ctx, chromedp.Evaluate[float64](`window.innerHeight`))
	if r.Top < -0.5 || r.Left < -0.5 || r.Bottom > h+0.5 || r.Right > w+0.5 || !r.Hit {
		t.Errorf("%s is not wholly in sight in a %gx%g viewport: %+v", sel, w, h, r)
	}
	return r
}

func mainScrollTop(t *testing.T, ctx context.Context) float64 {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.getElementById('main').scrollTop`))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestBrowserFailedRunShownInChat (issue 10 item 8): every route failing shows
// the plain sentence in the chat, the status pill and the API say failed
// until the next message, and the banner stays in sight after the chat
// scrolled to its end, at desktop and phone width; at 375 px the top bar
// covers neither the title nor the composer.
func TestBrowserFailedRunShownInChat(t *testing.T) {
	ctx := newBrowser(t)
	home := initHome(t)
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=wrong-key", "OPENROUTER_BASE_URL="+startFailingModel(t))
	do(t, ctx, chromedp.Navigate(s.url+"/"))
	send(t, ctx, s, "write something long")
	wait(t, ctx, s, `[data-testid="msg-assistant"]`)
	waitIdle(t, ctx, s)
	send(t, ctx, s, "now fail")
	wait(t, ctx, s, `[data-testid="run-ending"][data-kind="failed"]`)
	waitJS(t, ctx, s, "the pill says failed", `!!document.querySelector('[data-testid="conv-status"][data-status="failed"]')`)

	want := "Every model route failed: 401 from openrouter — check OPENROUTER_API_KEY in " + filepath.Join(home, "env") + "."
	if got := text(t, ctx, `[data-testid="run-ending-text"]`); got != want {
		t.Errorf("the chat says %q, want %q", got, want)
	}
	if got := text(t, ctx, `[data-testid="run-ending-spend"]`); got != "Spend: $0.0000." {
		t.Errorf("spend = %q", got)
	}
	if got := text(t, ctx, `[data-testid="conv-status"]`); got != "failed" {
		t.Errorf("status pill = %q, want failed", got)
	}
	id := strings.TrimPrefix(location(t, ctx), s.url+"/c/")
	waitJS(t, ctx, s, "the sidebar marks it failed", `!!document.querySelector('#sidebar [data-conversation=`+jsonText(id)+`] [data-testid="status-badge"][data-status="failed"]')`)
	var list []struct{ ID, Status string }
	getJSON(t, s.url+"/api/conversations", &list)
	var c struct {
		Status string
		Ended  *struct{ Status, Reason, Error string }
	}
	getJSON(t, s.url+"/api/conversations/"+id, &c)
	if c.Status != "failed" || c.Ended == nil || c.Ended.Reason != "model_error" || !strings.Contains(c.Ended.Error, "401") {
		t.Errorf("GET /api/conversations/%s: status %q, ended %+v; want failed, model_error, 401", id, c.Status, c.Ended)
	}
	for _, row := range list {
		if row.ID == id && row.Status != "failed" {
			t.Errorf("GET /api/conversations lists it %q, want failed", row.Status)
		}
	}

	// Loaded again, the page shows the failing route's banner and scrolls
	// the chat to its end: the banner is still in sight.
	do(t, ctx, chromedp.Reload())
	wait(t, ctx, s, `[data-testid="banner"]`)
	if got := text(t, ctx, `[data-testid="banner"]`); !strings.HasSuffix(got, want) {
		t.Errorf("banner = %q, want it to end with the chat's sentence", got)
	}
	waitJS(t, ctx, s, "the chat scrolled to its end", `(() => { const m = document.getElementById('main'); return m.scrollTop > 100 && m.scrollTop + m.clientHeight >= m.scrollHeight - 2; })()`)
	if top := mainScrollTop(t, ctx); top < 100 {
		t.Errorf("the chat did not scroll (scrollTop %g): the check below proves nothing", top)
	}
	inView(t, ctx, `[data-testid="banner"]`)
	inView(t, ctx, `[data-testid="run-ending"]`)
	inView(t, ctx, `[data-testid="composer-send"]`)

	// At 375 px, after the page loads and scrolls to its end.
	do(t, ctx, chromedp.EmulateViewport(375, 800), chromedp.Reload())
	wait(t, ctx, s, `[data-testid="run-ending"]`)
	waitJS(t, ctx, s, "the chat scrolled to its end", `(() => { const m = document.getElementById('main'); return m.scrollTop > 100 && m.scrollTop + m.clientHeight >= m.scrollHeight - 2; })()`)
	banner := inView(t, ctx, `[data-testid="banner"]`)
	bar := inView(t, ctx, `.topbar`)
	if bar.Top < banner.Bottom-0.5 {
		t.Errorf("the top bar %+v overlaps the banner %+v", bar, banner)
	}
	composer := inView(t, ctx, `[data-testid="composer"]`)
	inView(t, ctx, `[data-testid="composer-text"]`)
	inView(t, ctx, `[data-testid="composer-send"]`)
	if composer.Top < bar.Bottom {
		t.Errorf("the composer %+v runs under the top bar %+v", composer, bar)
	}
	if pageScrolls, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollHeight > window.innerHeight + 1`)); pageScrolls {
		t.Errorf("the page itself is taller than the screen: something is clipped below")
	}
	// Back at the top of the chat the title is below the bar, uncovered.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById('main').scrollTop = 0`))
	title := inView(t, ctx, `[data-testid="conv-title"]`)
	inView(t, ctx, `[data-testid="conv-status"]`)
	if title.Top < bar.Bottom-0.5 {
		t.Errorf("the title %+v is under the top bar %+v", title, bar)
	}
	do(t, ctx, chromedp.EmulateViewport(1280, 900))
	fitsPhone(t, ctx)
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById('main').scrollTop = 1e9`))
	shot(t, ctx, "failed")

	// The next message clears it: the notice goes, the pill moves on.
	send(t, ctx, s, "hello again")
	waitJS(t, ctx, s, "the notice gone and the reply shown", `!document.querySelector('[data-testid="run-ending"]')
		&& [...document.querySelectorAll('[data-testid="msg-assistant"]')].some(e => e.textContent.trim() === 'ok')`)
	waitIdle(t, ctx, s)
	c.Status, c.Ended = "", nil
	getJSON(t, s.url+"/api/conversations/"+id, &c)
	if c.Status != "idle" || c.Ended != nil {
		t.Errorf("after the next message: status %q, ended %+v; want idle", c.Status, c.Ended)
	}
	s.stop(t)
}

// TestBrowserQueuedNoteInChat (issue 10 item 8): a message sent while a turn runs
// is acknowledged in the chat as "queued: 1 waiting", then answered.
func TestBrowserQueuedNoteInChat(t *testing.T) {
	ctx := newBrowser(t)
	home := initHome(t)
	model, release := startHeldModel(t)
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+model)
	do(t, ctx, chromedp.Navigate(s.url+"/"))
	send(t, ctx, s, "go slow")
	wait(t, ctx, s, `[data-testid="working"]`)
	send(t, ctx, s, "and then this")
	wait(t, ctx, s, `[data-testid="queued-note"]`)
	if got := text(t, ctx, `[data-testid="queued-note"]`); !strings.HasPrefix(got, "queued: 1 waiting") {
		t.Errorf("queued note = %q", got)
	}
	if n := count(t, ctx, `[data-testid="msg-queued"]`); n != 1 {
		t.Errorf("%d queued messages shown, want 1", n)
	}
	inView(t, ctx, `[data-testid="queued-note"]`)
	shot(t, ctx, "queued")
	release()
	waitJS(t, ctx, s, "both answered", `[...document.querySelectorAll('[data-testid="msg-assistant"]')].map(e => e.textContent.trim()).join('|') === 'slow done|ok'`)
	waitIdle(t, ctx, s)
	if n := count(t, ctx, `[data-testid="queued-note"]`); n != 0 {
		t.Errorf("the queued note stayed after the turn took the message")
	}
	s.stop(t)
}

// TestBrowserApprovalCardShowsCommandReadably (issue 10 item 10): a shell command
// with > and a line break reads on the card as it would run, the call
// says it waits for approval; denied, it is labelled denied in the chat
// and on the runs page.
func TestBrowserApprovalCardShowsCommandReadably(t *testing.T) {
	ctx := newBrowser(t)
	home := initHome(t)
	script := writeScript(t, `
- tool_calls:
    - name: shell_run
      arguments: {command: "echo hi > out.txt\ncat out.txt"}
- text: "Not run, as you wished."
`)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+script)
	do(t, ctx, chromedp.Navigate(s.url+"/"))
	send(t, ctx, s, "make a file")
	wait(t, ctx, s, `[data-testid="approval-bar"]`)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="approval-bar"] [data-testid="arg-block"][data-arg="command"] [data-testid="arg-text"]').textContent`))
	if err != nil {
		t.Fatalf("no command block on the approval card: %v", err)
	}
	if got != "echo hi > out.txt\ncat out.txt" {
		t.Errorf("the card shows the command as %q", got)
	}
	// Rendered on two lines, as the command has.
	lines, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`(() => { const pre = document.querySelector('[data-testid="approval-bar"] [data-testid="arg-text"]').parentElement;
		const cs = getComputedStyle(pre);
		return Math.round((pre.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom)) / parseFloat(cs.lineHeight)); })()`))
	if lines != 2 {
		t.Errorf("the command shows on %d lines, want its two", lines)
	}
	bar := text(t, ctx, `[data-testid="approval-bar"]`)
	for _, bad := range []string{`\u003e`, `\n`, `\"`} {
		if strings.Contains(bar, bad) {
			t.Errorf("the approval card shows %q:\n%s", bad, bar)
		}
	}
	if got := text(t, ctx, `[data-testid="tool-card"] [data-testid="tool-status"]`); got != "waiting for your approval" {
		t.Errorf("the waiting call says %q", got)
	}
	fitsPhone(t, ctx)
	shot(t, ctx, "approval-command")

	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-testid="deny"]`)))
	waitJS(t, ctx, s, "the reply after the denial", `!document.querySelector('[data-testid="approval-bar"]')
		&& [...document.querySelectorAll('[data-testid="msg-assistant"]')].some(e => e.textContent.includes('Not run, as you wished.'))`)
	waitIdle(t, ctx, s)
	if got := text(t, ctx, `[data-testid="tool-card"] [data-testid="tool-status"]`); got != "denied" {
		t.Errorf("the denied call says %q in the chat", got)
	}
	if n := count(t, ctx, `[data-testid="tool-card"].tool-denied`); n != 1 {
		t.Errorf("the denied call is not styled as denied")
	}
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('details[data-testid="tool-card"]').forEach(d => d.open = true)`))
	shot(t, ctx, "denied")

	do(t, ctx,
		chromedp.Click(chromedp.CSS(`[data-testid="runs-link"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run"]`)),
	)
	if got := text(t, ctx, `[data-testid="run"] [data-testid="tool-card"] [data-testid="tool-status"]`); got != "denied" {
		t.Errorf("the denied call says %q on the runs page", got)
	}
	if lines := text(t, ctx, `[data-testid="run"]`); !strings.Contains(lines, "approval for shell_run: denied") {
		t.Errorf("runs page lacks the denial line:\n%s", lines)
	}
	s.stop(t)
}
