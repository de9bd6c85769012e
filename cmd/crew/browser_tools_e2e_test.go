package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser tools through a real `crew serve` built with -tags crewtest,
// driving Debian's Chromium: the test site's exact host:port is admitted
// by CREW_TEST_ALLOW_ADDRS, a second loopback server is not.

const formPage = `<!doctype html><html><head><title>Test form</title></head><body>
<h1 id="h">Form</h1>
<input id="name" aria-label="Name">
<input type="password" aria-label="Password">
<button id="save" onclick="document.getElementById('h').textContent = 'saved: ' + document.getElementById('name').value">Save</button>
<a href="/report.txt">Download report</a>
<img alt="pixel" src="http://%s/pixel.png">
<script>
setInterval(async () => {
  const r = await fetch('/flag');
  if ((await r.text()) === '1' && save.textContent === 'Save') { save.textContent = 'Delete all'; fetch('/renamed'); }
}, 50);
</script>
</body></html>`

// TestBrowserToolsBehindTheWall (R-BRW, R-SEC-1, R-SEC-2): navigate gives
// a fenced outline with refs; act types by ref; typing a password is
// refused; a click by ref works; after the page renamed the button the old
// ref is refused; a download lands in workspace/downloads/; a PDF is
// printed there; a screenshot is an image part; a subresource and a
// navigation to a non-admitted loopback port are refused by the wall.
func TestBrowserToolsBehindTheWall(t *testing.T) {
	chromiumPath(t)
	var secretHits atomic.Int32
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secretHits.Add(1)
		io.WriteString(w, "SECRET-INTERNAL")
	}))
	defer secret.Close()
	var flag atomic.Bool
	renamed := make(chan struct{}, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, formPage, strings.TrimPrefix(secret.URL, "http://"))
	})
	mux.HandleFunc("/flag", func(w http.ResponseWriter, r *http.Request) {
		if flag.Load() {
			io.WriteString(w, "1")
		}
	})
	mux.HandleFunc("/renamed", func(w http.ResponseWriter, r *http.Request) {
		select {
		case renamed <- struct{}{}:
		default:
		}
	})
	// fetch_url of /flip (admitted) makes the page rename its button and
	// answers once it has: the old ref is then stale, deterministically.
	mux.HandleFunc("/flip", func(w http.ResponseWriter, r *http.Request) {
		flag.Store(true)
		select {
		case <-renamed:
			io.WriteString(w, "renamed")
		case <-time.After(20 * time.Second):
			io.WriteString(w, "not renamed")
		}
	})
	mux.HandleFunc("/report.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Disposition", `attachment; filename="../../report.txt"`)
		io.WriteString(w, "quarterly numbers\n")
	})
	site := httptest.NewServer(mux)
	defer site.Close()
	addr := strings.TrimPrefix(site.URL, "http://")

	home := initHome(t)
	autonomousMaster(t, home)
	appendFile(t, filepath.Join(home, "config.yaml"), "\nbrowser_enabled: true\n")
	appendFile(t, filepath.Join(home, "agent.yaml"), "\nbrowser: act\nbrowser_hosts: [\"127.0.0.1\"]\n")
	script := writeScript(t, `
- tool_calls:
    - name: browser_navigate
      arguments: {url: "`+site.URL+`/form"}
- tool_calls:
    - name: browser_act
      arguments: {ref: e1, action: type, text: "Ana"}
- tool_calls:
    - name: browser_act
      arguments: {ref: e2, action: type, text: "hunter2"}
- tool_calls:
    - name: browser_act
      arguments: {ref: e3, action: click}
- tool_calls:
    - name: fetch_url
      arguments: {url: "`+site.URL+`/flip"}
- tool_calls:
    - name: browser_act
      arguments: {ref: e3, action: click}
- tool_calls:
    - name: browser_download
      arguments: {ref: e4}
- tool_calls:
    - name: browser_pdf
      arguments: {}
- tool_calls:
    - name: browser_screenshot
      arguments: {}
- tool_calls:
    - name: browser_navigate
      arguments: {url: "`+secret.URL+`/"}
- text: "done"
`)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+script, "CREW_TEST_ALLOW_ADDRS="+addr)
	_, acc := postJSON(t, s.url+"/api/inbound", map[string]any{"text": "use the browser"})
	c := waitConv(t, s.url, acc["conversation_id"].(string), "settled", settled)
	var res []string
	for _, m := range c.History {
		if m.Role == "tool" {
			res = append(res, m.Text)
		}
	}
	if os.Getenv("CREW_SHOW_RESULTS") != "" {
		t.Log(strings.Join(res, "\n------\n"))
	}
	if len(res) != 10 {
		t.Fatalf("%d tool results:\n%s\n%s", len(res), strings.Join(res, "\n---\n"), s.stderr)
	}
	want := []struct {
		name string
		has  []string
		not  []string
	}{
		{"navigate", []string{"Title: Test form", "URL: " + site.URL + "/form", "<<<UNTRUSTED DATA id=", `textbox "Name" [e1]`, `textbox "Password" [e2]`, `button "Save" [e3]`, `link "Download report" [e4]`,
			"Blocked: ", strings.TrimPrefix(secret.URL, "http://")}, nil},
		{"type", []string{`Did: type on textbox "Name" [e1]`, `value="Ana"`}, nil},
		{"password", []string{"password field", "crew browser login"}, []string{"Did:"}},
		{"click", []string{`Did: click on button "Save" [e3]`, `heading "saved: Ana"`}, nil},
		{"flip", []string{"renamed"}, []string{"not renamed"}},
		{"stale", []string{"element changed since the outline", `"Save"`, `"Delete all"`}, []string{"Did:"}},
		{"download", []string{"Saved: downloads/report.txt"}, nil},
		{"pdf", []string{"Saved: downloads/Test form.pdf"}, nil},
		{"screenshot", []string{"Screenshot: PNG"}, nil},
		{"navigate secret", []string{"refused by the crew's network wall", "loopback"}, []string{"SECRET-INTERNAL"}},
	}
	// The page's title is the page's words: inside the fence, never on a
	// harness line (R-SEC-1, TestBrowserTitleInsideTheFence's half here).
	if before, _, ok := strings.Cut(res[0], "<<<UNTRUSTED DATA id="); !ok || strings.Contains(before, "Title:") {
		t.Errorf("navigate: the title is outside the fence:\n%s", res[0])
	}
	for i, w := range want {
		for _, h := range w.has {
			if !strings.Contains(res[i], h) {
				t.Errorf("%s: missing %q in\n%s", w.name, h, res[i])
			}
		}
		for _, n := range w.not {
			if strings.Contains(res[i], n) {
				t.Errorf("%s: %q should not be in\n%s", w.name, n, res[i])
			}
		}
	}
	if n := secretHits.Load(); n != 0 {
		t.Errorf("the non-admitted server got %d requests", n)
	}
	ws := filepath.Join(home, "workspace")
	if b, err := os.ReadFile(filepath.Join(ws, "downloads", "report.txt")); err != nil || string(b) != "quarterly numbers\n" {
		t.Errorf("download: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "downloads", "Test form.pdf")); err != nil || !bytes.HasPrefix(b, []byte("%PDF")) {
		t.Errorf("pdf: %d bytes %v", len(b), err)
	}
	// The screenshot is kept in the log's object store (crew_spill), read
	// back below through the parts route.
	if _, err := os.Stat(filepath.Join(home, "browser", "master")); err != nil {
		t.Errorf("no profile under browser/master: %v", err)
	}
	// The chat shows each browser card's page title and URL, the
	// screenshot inline (a link to the full image, served from this
	// conversation's spills only) and the outlines folded.
	conv := acc["conversation_id"].(string)
	page := getText(t, s.url+"/c/"+conv)
	for _, want := range []string{`data-testid="tool-page-title">Test form<`, `data-testid="tool-page-url">` + site.URL + `/form<`, `data-testid="tool-outline"`, `data-testid="tool-shot"`} {
		if !strings.Contains(page, want) {
			t.Errorf("chat page lacks %s", want)
		}
	}
	src := regexp.MustCompile(`<img src="(/c/[^"]+/parts/[^"]+\.png)"`).FindStringSubmatch(page)
	if src == nil {
		t.Fatal("no screenshot <img> on the chat page")
	}
	resp, err := http.Get(s.url + src[1])
	if err != nil {
		t.Fatal(err)
	}
	img, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || !bytes.HasPrefix(img, []byte("\x89PNG")) {
		t.Errorf("GET %s: %d %s", src[1], resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, bad := range []string{"/c/" + conv + "/parts/..%2F..%2Fenv", "/c/" + conv + "/parts/x.txt", "/c/other1/parts/" + path.Base(src[1])} {
		if resp, err := http.Get(s.url + bad); err != nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %v %v", bad, resp.StatusCode, err)
		}
	}
	// In a real browser the screenshot loads inline (the page's CSP allows
	// our own images) and links to the full image.
	ui := newBrowser(t)
	do(t, ui, chromedp.Navigate(s.url+"/c/"+conv), chromedp.WaitVisible(chromedp.CSS(`[data-testid="tool-shot"]`)))
	loaded, err := chromedp.Run(ui, chromedp.Evaluate[bool](`(async () => { const i = document.querySelector('[data-testid="tool-shot"]'); await i.decode(); return i.naturalWidth > 0 && i.closest('a').getAttribute('href') === i.getAttribute('src') })()`, chromedp.EvalAwaitPromise))
	if err != nil || !loaded {
		t.Errorf("the inline screenshot did not load: %v", err)
	}
	shot(t, ui, "browser-tool-cards")
	out, _, _ := crew(t, home, "doctor")
	if !strings.Contains(out, "browser: enabled, Chromium ") || !strings.Contains(out, "agents: master (act)") {
		t.Errorf("doctor:\n%s", out)
	}
	s.stop(t)
}
