package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// sink is a host outside the render's CDN list that records every request.
type sink struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hits []string
}

func newSink(t *testing.T) *sink {
	s := &sink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits = append(s.hits, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		if r.URL.Path == "/evil.js" {
			w.Header().Set("Content-Type", "text/javascript")
			w.Write([]byte("window.evilRan = true;"))
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sink) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.hits...)
}

// The render of an html canvas runs in real Chromium inside the panel's
// sandboxed iframe: it cannot reach the app's API, read cookies or
// storage, post a form, or load a script from a host off the CDN list;
// opened as a page of its own it is refused.
func TestBrowserCanvasRenderSandbox(t *testing.T) {
	ctx := newBrowser(t)
	home := initHome(t)
	s := startServe(t, home)
	out := newSink(t)
	probe := `<!doctype html><title>probe</title>
<form id="f" method="post" action="` + out.srv.URL + `/form"><input name="x" value="1"></form>
<script src="` + out.srv.URL + `/evil.js"></script>
<script>
const r = {};
try { r.cookie = 'read:' + document.cookie; } catch (e) { r.cookie = 'threw'; }
try { r.storage = 'read:' + localStorage.length; } catch (e) { r.storage = 'threw'; }
r.evil = window.evilRan ? 'ran' : 'blocked';
r.origin = String(self.origin);
fetch('/api/conversations').then((x) => { r.fetch = 'ok ' + x.status; }, () => { r.fetch = 'failed'; })
  .then(() => fetch('` + out.srv.URL + `/fetch')).then(() => { r.out = 'ok'; }, () => { r.out = 'failed'; })
  .finally(() => {
    parent.postMessage({ sandboxProbe: r }, '*');
    try { document.getElementById('f').submit(); } catch (e) { /* refused */ }
  });
</script>`
	code, created, _ := apiDo(t, "POST", s.url+"/api/artifacts", map[string]any{"title": "Probe", "kind": "html", "content": probe})
	if code != 201 {
		t.Fatalf("create: %d %v", code, created)
	}
	id := created["id"].(string)
	do(t, ctx, chromedp.Navigate(s.url+"/canvases/"+id))
	wait(t, ctx, s, `[data-testid="canvas-render"]`)
	// Listen, then load the frame again so its report comes after.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.addEventListener('message', (ev) => { if (ev.data && ev.data.sandboxProbe) window.__probe = JSON.stringify(ev.data.sandboxProbe); });
		const f = document.querySelector('[data-testid="canvas-render"]'); f.src = f.src;`))
	waitJS(t, ctx, s, "the probe reported", `!!window.__probe`)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.__probe`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"cookie":"threw"`, `"storage":"threw"`, `"evil":"blocked"`, `"fetch":"failed"`, `"out":"failed"`, `"origin":"null"`} {
		if !strings.Contains(got, want) {
			t.Errorf("inside the sandbox: %s, want %s", got, want)
		}
	}
	// The form post would arrive within moments of the report; give it a
	// second, then it never came.
	time.Sleep(time.Second)
	if hits := out.got(); len(hits) != 0 {
		t.Errorf("the sandboxed page reached an outside host: %v", hits)
	}
	// Opened directly, the render is refused (Sec-Fetch-Dest: document).
	do(t, ctx, chromedp.Navigate(s.url+"/api/artifacts/"+id+"/render"))
	body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if !strings.Contains(body, "not_iframe") {
		t.Errorf("direct open of a render: %q", body)
	}
}

const canvasPanelScript = `
- text: "Hello."
- tool_calls:
    - name: artifact_create
      arguments: {title: "Trip plan", kind: markdown, content: "# Trip\n\n- day one: Hanoi\n- day two: Ha Long\n"}
  delay: 300ms
- text: "I wrote the plan."
`

// The canvas panel in real Chromium: the agent's write shows as a card and
// opens in the panel of the tab that sent the message, with the draft
// streamed there only; the owner edits and it autosaves; every open tab
// hears of it; the history shows the diff and restores; the library lists
// it. Screenshots at 1280 and 375 px.
func TestBrowserCanvasPanel(t *testing.T) {
	ctx := newBrowser(t)
	home := initHome(t)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+writeScript(t, canvasPanelScript))
	do(t, ctx, chromedp.Navigate(s.url+"/"))
	wait(t, ctx, s, `[data-testid="composer-text"]`)
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`[data-testid="composer-text"]`), "hello"), chromedp.Click(chromedp.CSS(`[data-testid="composer-send"]`)))
	wait(t, ctx, s, `[data-testid="msg-assistant"]`)
	waitIdle(t, ctx, s)
	conv := strings.TrimPrefix(location(t, ctx), s.url+"/c/")

	other := newTab(t, ctx)
	do(t, other, chromedp.Navigate(s.url+"/c/"+conv))
	wait(t, other, s, `[data-testid="composer-text"]`)

	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`[data-testid="composer-text"]`), "plan the trip"), chromedp.Click(chromedp.CSS(`[data-testid="composer-send"]`)))
	wait(t, ctx, s, `[data-testid="canvas-card"]`)
	waitText(t, ctx, `[data-testid="canvas-card-verb"]`, "created · v1")
	waitJS(t, ctx, s, "the panel opened on the new canvas", `document.querySelector('[data-testid="canvas-panel"]').dataset.version === '1' && !document.querySelector('[data-testid="canvas-panel"]').hidden`)
	if v, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="canvas-panel"]').dataset.draftSeen || ''`)); v != "1" {
		t.Errorf("the sending tab did not show the draft")
	}
	waitText(t, ctx, `[data-testid="canvas-title"]`, "Trip plan")
	waitIdle(t, ctx, s)
	shot(t, ctx, "canvas-panel")

	// The other tab on the same chat gets the card, not the draft.
	wait(t, other, s, `[data-testid="canvas-card"]`)
	if v, _ := chromedp.Run(other, chromedp.Evaluate[string](`document.querySelector('[data-testid="canvas-panel"]').dataset.draftSeen || ''`)); v != "" {
		t.Errorf("a tab that did not send the message showed the draft")
	}
	do(t, other, chromedp.Click(chromedp.CSS(`[data-testid="canvas-open"]`)))
	waitJS(t, other, s, "the other tab opened the canvas", `document.querySelector('[data-testid="canvas-panel"]').dataset.version === '1'`)

	// Edit: autosave after a pause makes v2; the other tab follows.
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-testid="canvas-editor"]`)),
		chromedp.Evaluate[chromedp.Void](`const e = document.querySelector('[data-testid="canvas-editor"]'); e.setSelectionRange(e.value.length, e.value.length);`),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="canvas-editor"]`), "- day three: Sapa\n"))
	waitText(t, ctx, `[data-testid="canvas-save"]`, "saved v2")
	waitJS(t, other, s, "the other tab shows v2", `document.querySelector('[data-testid="canvas-panel"]').dataset.version === '2'
		&& document.querySelector('[data-testid="canvas-editor"]').value.includes('day three')`)
	code, a, _ := apiDo(t, "GET", s.url+"/api/artifacts/"+panelArtifact(t, ctx), nil)
	if code != 200 || !strings.Contains(a["content"].(string), "- day three: Sapa") || a["author"] != "owner" {
		t.Fatalf("saved: %d %v", code, a)
	}

	// History: the diff of v2, then restore v1 as v3.
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-testid="canvas-history-button"]`)))
	wait(t, ctx, s, `[data-testid="canvas-version-row"][data-version="2"] [data-testid="canvas-version-diff"]`)
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-testid="canvas-version-row"][data-version="2"] [data-testid="canvas-version-diff"]`)))
	waitText(t, ctx, `[data-testid="canvas-diff"]`, "+ - day three: Sapa")
	shot(t, ctx, "canvas-history")
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-testid="canvas-version-row"][data-version="1"] [data-testid="canvas-restore"]`)))
	waitJS(t, ctx, s, "restored as v3", `document.querySelector('[data-testid="canvas-panel"]').dataset.version === '3'
		&& !document.querySelector('[data-testid="canvas-editor"]').value.includes('day three')`)

	// The library, open in the other tab, hears of a rename made here.
	library := other
	do(t, library, chromedp.Navigate(s.url+"/canvases"))
	wait(t, library, s, `[data-testid="canvas-row"]`)
	// Rename in place; delete asks once more.
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-testid="canvas-title"]`)))
	wait(t, ctx, s, `[data-testid="canvas-rename"]`)
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="canvas-rename"]').value = ''`),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="canvas-rename"]`), "Vietnam trip\r"))
	waitText(t, ctx, `[data-testid="canvas-title"]`, "Vietnam trip")
	waitText(t, library, `[data-testid="canvas-library"]`, "Vietnam trip")
	shot(t, library, "canvas-library")
	id := panelArtifact(t, ctx)
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-testid="canvas-delete"]`)))
	if code, _, _ := apiDo(t, "GET", s.url+"/api/artifacts/"+id, nil); code != 200 {
		t.Fatalf("one click deleted the canvas")
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-testid="canvas-delete"]`)))
	waitJS(t, ctx, s, "the panel closed", `document.querySelector('[data-testid="canvas-panel"]').hidden`)
	if code, _, _ := apiDo(t, "GET", s.url+"/api/artifacts/"+id, nil); code != 404 {
		t.Errorf("after the confirmed delete: %d", code)
	}
	waitJS(t, library, s, "the library dropped it", `!document.querySelector('[data-testid="canvas-row"]')`)
}

func panelArtifact(t *testing.T, ctx context.Context) string {
	t.Helper()
	id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="canvas-panel"]').dataset.artifact || ''`))
	if err != nil || id == "" {
		t.Fatalf("no artifact in the panel: %v", err)
	}
	return id
}
