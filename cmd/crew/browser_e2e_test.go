package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Browser tests: a real `crew serve` child process driven by Debian's
// Chromium. They skip without Chromium unless CREW_REQUIRE_BROWSER=1 (set
// by .ci/run). CREW_UI_SCREENSHOTS=DIR also saves the screenshots there
// (docs/ui.md shows them).

func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	if os.Getenv("CREW_REQUIRE_BROWSER") == "1" {
		t.Fatal("no Chromium found and CREW_REQUIRE_BROWSER=1 (apt-get install chromium)")
	}
	t.Skip("no Chromium found: apt-get install chromium to run the browser tests")
	return ""
}

// newBrowser starts headless Chromium and returns a tab's context.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newTab opens another tab in the same browser.
func newTab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	return ctx
}

func do(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// shot saves a screenshot at desktop and phone width.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dirs := []string{t.TempDir()}
	if d := os.Getenv("CREW_UI_SCREENSHOTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, size := range []struct {
		suffix string
		w, h   int64
	}{{"desktop", 1280, 900}, {"phone", 375, 800}} {
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h), chromedp.Sleep(150*time.Millisecond))
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dirs {
			if err := os.WriteFile(filepath.Join(d, name+"-"+size.suffix+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	do(t, ctx, chromedp.EmulateViewport(1280, 900))
}

const streamScript = `
- text: "**Hello** from the crew. A code block stays code:\n\n` + "```" + `\n<script>alert(1)</script>\n` + "```" + `\n\nAnd a list:\n\n- one\n- two"
  delay: 400ms
`

// Send a message in the page and see the streamed reply rendered.
func TestBrowserChatStreamsReply(t *testing.T) {
	ctx := newBrowser(t)
	home := initHome(t)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+writeScript(t, streamScript))
	do(t, ctx,
		chromedp.Navigate(s.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="composer-text"]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="composer-text"]`), "hello crew"),
		chromedp.Click(chromedp.CSS(`[data-testid="composer-send"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="msg-assistant"]`)),
	)
	got := text(t, ctx, `[data-testid="msg-assistant"]`)
	if !strings.Contains(got, "Hello from the crew") || !strings.Contains(got, "<script>alert(1)</script>") {
		t.Errorf("assistant message = %q (the code block must show as text)", got)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="msg-assistant"] script').length`)); n != 0 {
		t.Errorf("a script element was rendered from model text")
	}
	if user := text(t, ctx, `[data-testid="msg-user"]`); !strings.Contains(user, "hello crew") {
		t.Errorf("user message = %q", user)
	}
	shot(t, ctx, "chat")
	s.stop(t)
}

// An approval in two tabs: approving in one shows the result and the
// final answer there, and the bar disappears from the other.
func TestBrowserApprovalInTwoTabs(t *testing.T) {
	browser := newBrowser(t)
	home := initHome(t)
	s := startServe(t, home, "MY_AGENT_ROUTES=fake:script:"+writeScript(t, writeScriptYAML))
	do(t, browser,
		chromedp.Navigate(s.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="composer-text"]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="composer-text"]`), "write me a note"),
		chromedp.Click(chromedp.CSS(`[data-testid="composer-send"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="approval-bar"]`)),
	)
	if tool := text(t, browser, `[data-testid="approval-tool"]`); !strings.Contains(tool, "workspace_write") {
		t.Errorf("approval tool = %q", tool)
	}
	if args := text(t, browser, `[data-testid="approval-args"]`); !strings.Contains(args, "note.txt") {
		t.Errorf("approval args = %q", args)
	}
	here, err := chromedp.Run(browser, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	other := newTab(t, browser)
	do(t, other, chromedp.Navigate(here), chromedp.WaitVisible(chromedp.CSS(`[data-testid="approval-bar"]`)))
	shot(t, browser, "approval")

	do(t, browser,
		chromedp.Click(chromedp.CSS(`[data-testid="approve"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`[data-testid="approval-bar"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="msg-assistant"]`)),
	)
	if got := text(t, browser, `[data-testid="msg-assistant"]`); !strings.Contains(got, "All done.") {
		t.Errorf("final answer = %q", got)
	}
	if out := text(t, browser, `[data-testid="tool-card"]`); !strings.Contains(out, "workspace_write") {
		t.Errorf("tool card = %q", out)
	}
	// The second tab hears of the decision through the activity feed.
	do(t, other, chromedp.WaitNotPresent(chromedp.CSS(`[data-testid="approval-bar"]`)))
	if b, err := os.ReadFile(filepath.Join(home, "workspace", "note.txt")); err != nil || string(b) != "hello from the agent" {
		t.Errorf("note.txt = %q, %v", b, err)
	}
	do(t, browser, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('details[data-testid="tool-card"]').forEach(d => d.open = true)`))
	shot(t, browser, "chat-tool")

	// The runs page shows the run with its nested steps.
	do(t, browser,
		chromedp.Click(chromedp.CSS(`[data-testid="runs-link"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run"]`)),
	)
	steps, _ := chromedp.Run(browser, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="run"] [data-testid="step"]').length`))
	calls, _ := chromedp.Run(browser, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="step"] [data-testid="model-call"]').length`))
	if steps != 2 || calls != 2 {
		t.Errorf("runs page: %d steps, %d model calls; want 2 and 2", steps, calls)
	}
	if lines := text(t, browser, `[data-testid="run"]`); !strings.Contains(lines, "approval for workspace_write: approved") {
		t.Errorf("runs page lacks the approval line:\n%s", lines)
	}
	shot(t, browser, "runs")
	s.stop(t)
}
