package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Browser tests of the crew's own features: delegation, memory proposals,
// turn notes and starting a new conversation. Same machinery as
// browser_e2e_test.go; every wait is bounded by the browser context.

// useUTC sets the home's timezone to UTC, so "today" for the notes the
// test writes is the server's today whatever the machine's zone.
func useUTC(t *testing.T, home string) string {
	t.Helper()
	path := filepath.Join(home, "config.yaml")
	b, err := os.ReadFile(path)
	must(t, err)
	b = regexp.MustCompile(`(?m)^timezone: .*$`).ReplaceAll(b, []byte("timezone: UTC"))
	must(t, os.WriteFile(path, b, 0o644))
	return time.Now().UTC().Format(time.DateOnly)
}

// waitText waits until the first element matching sel contains want.
func waitText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	js := `(() => { const e = document.querySelector(` + jsonText(sel) + `); return !!e && e.textContent.includes(` + jsonText(want) + `); })()`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+jsonText(sel)+`) || {}).textContent || ""`))
		t.Fatalf("%s never showed %q: %v\nit shows %q", sel, want, err, got)
	}
}

// wait waits until sel is visible, across page loads, for 30 s at most;
// if it never is, it shows the page and the server's log.
func wait(t *testing.T, ctx context.Context, s *server, sel string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(wctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		dump(t, ctx, s, sel+" visible", err)
	}
}

// waitIdle waits until the chat, its header and the sidebar all say the
// run is over.
func waitIdle(t *testing.T, ctx context.Context, s *server) {
	t.Helper()
	waitJS(t, ctx, s, "the page says idle", `!!document.querySelector('[data-testid="chat"][data-status="idle"]')
		&& !!document.querySelector('[data-testid="conv-status"][data-status="idle"]')
		&& !document.querySelector('[data-testid="working"]')
		&& !document.querySelector('#sidebar [aria-current="page"] [data-testid="status-badge"]')`)
}

// waitJS waits until the expression is true on the page now shown (30 s
// at most); if it never is, it shows the page and the server's log.
func waitJS(t *testing.T, ctx context.Context, s *server, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		dump(t, ctx, s, what, err)
	}
}

// dump fails the test with the page, the conversations the server has and
// its log.
func dump(t *testing.T, ctx context.Context, s *server, what string, err error) {
	t.Helper()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.outerHTML`))
	var api []map[string]any
	getJSON(t, s.url+"/api/conversations", &api)
	t.Fatalf("%s: never, at %s: %v\n%s\n--- /api/conversations: %v\n--- crew serve:\n%s", what, loc, err, html, api, s.stderr)
}

func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+jsonText(sel)+`).length`))
	if err != nil {
		t.Fatalf("count %s: %v", sel, err)
	}
	return n
}

func location(t *testing.T, ctx context.Context) string {
	t.Helper()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// fitsPhone fails when the page is wider than a 375 px screen: content
// cut off or scrolling sideways. The page is measured again for up to
// 3 s, since a live update may be swapping a part in when it is first
// measured; what sticks out is named from the whole page.
func fitsPhone(t *testing.T, ctx context.Context) {
	t.Helper()
	do(t, ctx, chromedp.EmulateViewport(375, 800))
	defer do(t, ctx, chromedp.EmulateViewport(1280, 900))
	var wide string
	for try := 0; try < 15; try++ {
		var err error
		wide, err = chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
			const w = document.documentElement.clientWidth + 1;
			const out = e => e.getBoundingClientRect().right > w && !e.closest('pre, .diff');
			const name = e => e.tagName.toLowerCase() + (e.dataset.testid ? '[' + e.dataset.testid + ']' : '.' + e.className);
			let els = [...document.querySelectorAll('main *')].filter(out);
			const scrolls = document.documentElement.scrollWidth > document.documentElement.clientWidth;
			if (scrolls && els.length === 0) {
				els = [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > w);
			}
			return els.map(name).slice(0, 5).join(' ') + (scrolls ? ' (page scrolls sideways)' : '');
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		if wide == "" {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("at 375 px these stick out of %s: %s", location(t, ctx), wide)
}

// R-DEL in the browser: the master delegates to health-coach; its answer
// is pinned in the master's chat with a link to the child conversation,
// which takes no messages; the runs page nests the child's run.
func TestBrowserDelegateCard(t *testing.T) {
	ctx := newBrowser(t)
	api := &scriptedCrewAPI{sent: map[string][]string{}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	home := initHome(t)
	appendFile(t, filepath.Join(home, "agent.yaml"), "\ndelegates: [health-coach]\n")
	putAgent(t, home, "health-coach", "name: Health coach\ndescription: meals and training\nroutes: [fake:echo]\ntools: [workspace_read, progress_note]\n",
		"HEALTH-COACH-PERSONA: you are the owner's health coach.")
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/good",
		"OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+srv.URL+"/v1")

	do(t, ctx,
		chromedp.Navigate(s.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="composer-text"]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="composer-text"]`), "What breakfast before my run?"),
		chromedp.Click(chromedp.CSS(`[data-testid="composer-send"]`)),
	)
	wait(t, ctx, s, `[data-testid="delegate-answer"]`)
	wait(t, ctx, s, `[data-testid="msg-assistant"]`)
	waitText(t, ctx, `[data-testid="msg-assistant"]`, "The coach says: oats.")
	waitIdle(t, ctx, s)
	if got := text(t, ctx, `[data-testid="delegate-title"]`); got != "Health coach answered" {
		t.Errorf("delegate card title = %q", got)
	}
	if got := text(t, ctx, `[data-testid="delegate-answer"]`); !strings.Contains(got, "Oats with banana, two hours before the run.") {
		t.Errorf("delegate card answer = %q", got)
	}
	if got := text(t, ctx, `[data-testid="delegate-status"]`); got != "done" {
		t.Errorf("delegate card status = %q", got)
	}
	master := location(t, ctx)
	child, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="delegate-card"]').dataset.childConversation`))
	if err != nil || child == "" {
		t.Fatalf("the delegate card names no child conversation: %v", err)
	}
	if href, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="delegate-link"]').getAttribute('href')`)); href != "/c/"+child {
		t.Errorf("delegate link = %q, want /c/%s", href, child)
	}
	fitsPhone(t, ctx)
	shot(t, ctx, "delegate")

	// The child's own conversation: the brief, its answer, and the note
	// in place of the composer.
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`[data-testid="delegate-link"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="delegated-note"]`)),
	)
	if got := location(t, ctx); got != s.url+"/c/"+child {
		t.Errorf("the delegate link went to %s", got)
	}
	if note := text(t, ctx, `[data-testid="delegated-note"]`); !strings.Contains(note, "Delegated by") {
		t.Errorf("delegated note = %q", note)
	}
	if back, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="delegated-note"] a').href`)); back != master {
		t.Errorf("the delegated note links to %q, want the master's %q", back, master)
	}
	if n := count(t, ctx, `[data-testid="composer"], [data-testid="close-button"]`); n != 0 {
		t.Errorf("the child conversation offers a composer or New conversation (%d)", n)
	}
	if got := text(t, ctx, `[data-testid="msg-assistant"]`); !strings.Contains(got, "Oats with banana") {
		t.Errorf("child's answer = %q", got)
	}
	fitsPhone(t, ctx)
	shot(t, ctx, "delegate-child")

	// The master's runs: the child's run nested under the delegate call.
	do(t, ctx,
		chromedp.Navigate(master),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="runs-link"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="runs-link"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="delegate-run"] [data-testid="run"]`)),
	)
	if n := count(t, ctx, `.runs > [data-testid="run"]`); n != 1 {
		t.Errorf("runs page: %d top-level runs, want the master's one", n)
	}
	if n := count(t, ctx, `[data-testid="run"] [data-testid="run"]`); n != 1 {
		t.Errorf("runs page: %d nested runs, want the child's one", n)
	}
	if got := text(t, ctx, `[data-testid="delegate-run"] [data-testid="run-agent"]`); got != "health-coach" {
		t.Errorf("nested run's agent = %q", got)
	}
	if got := text(t, ctx, `[data-testid="delegate-run"] [data-testid="run-trigger"]`); got != "delegate" {
		t.Errorf("nested run's trigger = %q", got)
	}
	fitsPhone(t, ctx)
	shot(t, ctx, "runs-delegate")
	s.stop(t)
}

// R-MEM-2 in the browser: a supervised agent's notes, consolidated from
// the /memory form, give a proposal with a green and red diff that waits;
// Approve writes MEMORY.md, Roll back puts the old text back.
func TestBrowserMemoryProposal(t *testing.T) {
	ctx := newBrowser(t)
	home := initHome(t)
	today := useUTC(t, home)
	dir := filepath.Join(home, "agents", "health-coach") // autonomous: false
	memory := filepath.Join(dir, "MEMORY.md")
	old := "# Memory\n\n- Goal: 10k under 55 minutes.\n- Eggs before long runs.\n"
	must(t, os.WriteFile(memory, []byte(old), 0o644))
	must(t, os.MkdirAll(filepath.Join(dir, "memory"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "memory", today+".md"),
		[]byte("- 08:10 new goal: 10k under 50 minutes\n- 12:30 vegetarian now: no eggs; oats with banana before long runs\n"), 0o644))
	v1 := "# Memory\n\n- Goal: 10k under 50 minutes.\n- Vegetarian: oats with banana before long runs.\n"
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+writeScript(t, "- text: "+jsonText(v1)+"\n"))

	do(t, ctx,
		chromedp.Navigate(s.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="memory-link"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="memory-link"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="no-proposals"]`)),
		chromedp.SetValue(chromedp.CSS(`[data-testid="memory-agent"]`), "health-coach"),
		chromedp.Click(chromedp.CSS(`[data-testid="memory-consolidate-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="proposal"][data-status="pending"]`)),
	)
	if got := text(t, ctx, `[data-testid="proposal-kind"]`); got != "change" {
		t.Errorf("proposal kind = %q, want change", got)
	}
	if got := text(t, ctx, `[data-testid="proposal-reason"]`); !strings.Contains(got, "applied without a human") {
		t.Errorf("proposal reason = %q", got)
	}
	added, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="proposal-diff"] .diff-add')].map(e => e.textContent)`))
	removed, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="proposal-diff"] .diff-del')].map(e => e.textContent)`))
	if strings.Join(added, "|") != "+- Goal: 10k under 50 minutes.|+- Vegetarian: oats with banana before long runs." ||
		strings.Join(removed, "|") != "-- Goal: 10k under 55 minutes.|-- Eggs before long runs." {
		t.Errorf("diff: added %q, removed %q", added, removed)
	}
	// Added lines are green, removed ones red.
	colours, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const rgb = s => getComputedStyle(document.querySelector(s)).color.match(/\d+/g).map(Number);
		const add = rgb('.diff-add'), del = rgb('.diff-del');
		return add[1] > add[0] && add[1] > add[2] && del[0] > del[1] && del[0] > del[2];
	})()`))
	if err != nil || !colours {
		t.Errorf("the diff is not green for + and red for -: %v", err)
	}
	if b, _ := os.ReadFile(memory); string(b) != old {
		t.Fatalf("MEMORY.md changed before approval: %q", b)
	}
	fitsPhone(t, ctx)
	shot(t, ctx, "memory")

	do(t, ctx,
		chromedp.Click(chromedp.CSS(`[data-testid="proposal-approve"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="proposal"][data-status="applied"] [data-testid="proposal-rollback"]`)),
	)
	if got := text(t, ctx, `[data-testid="proposal-status"]`); got != "applied" {
		t.Errorf("status after approve = %q", got)
	}
	if b, _ := os.ReadFile(memory); string(b) != v1 {
		t.Fatalf("MEMORY.md after approve = %q, want %q", b, v1)
	}
	if n := count(t, ctx, `[data-testid="proposal-approve"], [data-testid="proposal-reject"]`); n != 0 {
		t.Errorf("an applied proposal still offers %d decisions", n)
	}
	// A decided proposal's diff is folded; open it for the picture.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('details.proposal-diff').forEach(d => d.open = true)`))
	fitsPhone(t, ctx)
	shot(t, ctx, "memory-applied")

	do(t, ctx,
		chromedp.Click(chromedp.CSS(`[data-testid="proposal-rollback"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="proposal"][data-status="rolled_back"]`)),
	)
	if got := text(t, ctx, `[data-testid="proposal-status"]`); got != "rolled back" {
		t.Errorf("status after rollback = %q", got)
	}
	if n := count(t, ctx, `[data-testid="proposal-rollback"]`); n != 0 {
		t.Errorf("a rolled back proposal still offers Roll back")
	}
	if b, _ := os.ReadFile(memory); string(b) != old {
		t.Fatalf("MEMORY.md after rollback = %q, want the old %q", b, old)
	}
	s.stop(t)
}

// R-CTX-2 and closing in the browser: the notes sent with a message unfold
// under it; New conversation closes the chat and goes home, and the old
// chat says it is closed.
func TestBrowserTurnNotesAndNewConversation(t *testing.T) {
	ctx := newBrowser(t)
	model := &recordingModel{}
	api := httptest.NewServer(model)
	t.Cleanup(api.Close)
	home := initHome(t)
	today := useUTC(t, home)
	must(t, os.WriteFile(filepath.Join(home, "memory", today+".md"), []byte("- 07:30 ran 5k in 27 minutes\n- 13:00 lunch: lentil soup\n"), 0o644))
	s := startServe(t, home, "MY_AGENT_ROUTES=openrouter:vendor/model", "OPENROUTER_API_KEY=test-key", "OPENROUTER_BASE_URL="+api.URL+"/v1")

	do(t, ctx,
		chromedp.Navigate(s.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="composer-text"]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="composer-text"]`), "How did today go?"),
		chromedp.Click(chromedp.CSS(`[data-testid="composer-send"]`)),
	)
	wait(t, ctx, s, `[data-testid="msg-assistant"]`)
	waitText(t, ctx, `[data-testid="msg-assistant"]`, "ok")
	waitIdle(t, ctx, s)
	if n := count(t, ctx, `[data-testid="msg-user"] [data-testid="turn-notes"]:not([open])`); n != 1 {
		h, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('chat').outerHTML`))
		t.Fatalf("want one folded turn-notes under the owner's message, have %d:\n%s", n, h)
	}
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`[data-testid="turn-notes"] summary`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="turn-notes"] pre`)),
	)
	if got := text(t, ctx, `[data-testid="turn-notes"] summary`); got != "Memory sent with this message" {
		t.Errorf("turn notes summary = %q", got)
	}
	notes := text(t, ctx, `[data-testid="turn-notes"] pre`)
	if !strings.Contains(notes, "Today's notes (memory/"+today+".md)") || !strings.Contains(notes, "- 07:30 ran 5k in 27 minutes") {
		t.Errorf("turn notes = %q", notes)
	}
	if got := text(t, ctx, `[data-testid="msg-user"] .text`); got != "How did today go?" {
		t.Errorf("the owner's message reads %q (the notes belong beside it, not in it)", got)
	}
	fitsPhone(t, ctx)
	shot(t, ctx, "turn-notes")

	old := location(t, ctx)
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`[data-testid="close-button"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="conversations"]`)),
	)
	if got := location(t, ctx); got != s.url+"/" {
		t.Errorf("New conversation went to %s, want the home page", got)
	}
	do(t, ctx,
		chromedp.Navigate(old),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="closed-note"]`)),
	)
	if got := text(t, ctx, `[data-testid="conv-status"]`); got != "closed" {
		t.Errorf("status after New conversation = %q", got)
	}
	if n := count(t, ctx, `[data-testid="composer"], [data-testid="close-button"]`); n != 0 {
		t.Errorf("a closed conversation offers a composer or New conversation (%d)", n)
	}
	if note := text(t, ctx, `[data-testid="closed-note"]`); !strings.Contains(note, "This conversation is closed.") {
		t.Errorf("closed note = %q", note)
	}
	fitsPhone(t, ctx)
	shot(t, ctx, "closed")
	s.stop(t)
}
