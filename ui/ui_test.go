package ui

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"
)

func render(t *testing.T, c templ.Component) string {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(t.Context(), &buf); err != nil {
		t.Fatalf("render: %v", err)
	}
	return buf.String()
}

// byTestID returns the elements carrying data-testid=id, each from its
// start tag to its matching end tag (or just the tag when it is void).
func byTestID(html, id string) []string {
	var out []string
	marker := `data-testid="` + id + `"`
	for from := 0; ; {
		i := strings.Index(html[from:], marker)
		if i < 0 {
			return out
		}
		i += from
		start := strings.LastIndex(html[:i], "<")
		name := html[start+1:]
		name = name[:strings.IndexAny(name, " \t\n>")]
		out = append(out, element(html[start:], name))
		from = i + len(marker)
	}
}

// element cuts the element that s starts with, counting nested tags of the
// same name.
func element(s, name string) string {
	open, closing := regexp.MustCompile(`<`+name+`[\s>]`), "</"+name+">"
	depth, pos := 0, 0
	for {
		o := open.FindStringIndex(s[pos:])
		c := strings.Index(s[pos:], closing)
		if c < 0 {
			return s[:strings.Index(s, ">")+1] // void element
		}
		if o != nil && o[0] < c {
			depth++
			pos += o[1]
			continue
		}
		depth--
		pos += c + len(closing)
		if depth == 0 {
			return s[:pos]
		}
	}
}

// text is the element's text without tags.
func text(el string) string {
	return strings.Join(strings.Fields(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(el, " ")), " ")
}

func one(t *testing.T, html, id string) string {
	t.Helper()
	els := byTestID(html, id)
	if len(els) != 1 {
		t.Fatalf("want 1 element data-testid=%q, got %d", id, len(els))
	}
	return els[0]
}

func none(t *testing.T, html, id string) {
	t.Helper()
	if n := len(byTestID(html, id)); n != 0 {
		t.Errorf("want no data-testid=%q, got %d", id, n)
	}
}

func contains(t *testing.T, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("want %q in\n%s", w, s)
		}
	}
}

func shell() Shell {
	return Shell{
		Title: "my-agent-crew",
		Home:  "/home/me/.crew",
		Agents: []AgentRow{
			{ID: "master", Name: "Master", Description: "Runs the day", Routes: "anthropic:sonnet → fake:echo"},
			{ID: "coach", Name: "Coach", Description: "Training plans", Routes: "openai:mini"},
		},
		Conversations: []ConversationRow{
			{ID: "web-20261130", Title: "Newest", Agent: "master", Channel: "web", Status: "running", Updated: "Nov 30 08:01", Queued: 2},
			{ID: "web-20261129", Title: "Waiting", Agent: "master", Channel: "web", Status: "awaiting_approval", Updated: "Nov 29 10:00"},
			{ID: "coach-web-20261128", Title: "Stuck", Agent: "coach", Channel: "web", Status: "halted", Updated: "Nov 28 10:00"},
			{ID: "web-20261127", Title: "", Agent: "master", Channel: "web", Status: "idle", Updated: "Nov 27 10:00"},
		},
		CSRF: "tok123",
	}
}

func conversationView() ConversationView {
	sh := shell()
	sh.Title, sh.Active = "Newest", "web-20261130"
	return ConversationView{
		Shell:   sh,
		Conv:    sh.Conversations[0],
		LastSeq: 41,
		Items: []Item{
			{Kind: ItemUser, Text: "Plan my run", Time: "08:01"},
			{Kind: ItemAssistant, Text: "**Sure**", HTML: "<p><strong>Sure</strong></p>"},
			{Kind: ItemTool, Tool: &ToolCard{CallID: "c1", Tool: "fetch_url", Args: `{"url": "https://example.com"}`, Output: "200 OK"}},
			{Kind: ItemTool, Tool: &ToolCard{CallID: "c2", Tool: "shell", Args: `{"cmd": "rm -rf /"}`, Outcome: "denied", IsError: true}},
			{Kind: ItemTool, Tool: &ToolCard{CallID: "c3", Tool: "read_file", Args: `{}`, Output: "no such file", IsError: true}},
			{Kind: ItemTool, Tool: &ToolCard{CallID: "c4", Tool: "browser", Args: `{}`, Running: true}},
			{Kind: ItemNote, Text: "Steered: go slower"},
			{Kind: ItemUser, Text: "and tomorrow?", Queued: true},
		},
		Approval: &ApprovalCard{
			ID: "ap1", Tool: "shell", Args: `{"cmd": "ls"}`, Reason: "shell is gated",
			ExpiresAt: time.Date(2026, 11, 30, 8, 11, 0, 0, time.UTC), ExpiresIn: "9m 12s",
		},
		Ending: &RunEnding{Kind: "halted", Status: "halted", Reason: "max_steps", Spend: "$0.0012",
			Text: "Stopped: the run used all its steps (max_steps) before finishing — send a message to let it carry on."},
	}
}

func TestHomePage(t *testing.T) {
	sh := shell()
	sh.Banner = "Running on fake:echo: no model configured"
	html := render(t, HomePage(HomeView{Shell: sh, Conversations: sh.Conversations}))

	contains(t, html, `<meta name="viewport"`, `<link rel="stylesheet" href="/static/app.css">`,
		`<script src="/static/app.js" defer></script>`, `data-conversation=""`, `data-last-seq="0"`)
	contains(t, text(one(t, html, "banner")), "Running on fake:echo")

	side := one(t, html, "sidebar")
	contains(t, side, `id="sidebar"`)
	if got := len(byTestID(side, "agent")); got != 2 {
		t.Errorf("agents: got %d, want 2", got)
	}
	contains(t, text(side), "Master", "Runs the day", "anthropic:sonnet → fake:echo")
	links := byTestID(one(t, side, "conv-list"), "conv-link")
	if len(links) != 4 {
		t.Fatalf("conversation links: got %d, want 4", len(links))
	}
	contains(t, links[0], `href="/c/web-20261130"`, `data-status="running"`, "2 queued")
	contains(t, links[1], "awaiting approval")
	contains(t, links[2], `data-status="halted"`)
	contains(t, links[3], "web-20261127") // untitled: named by its id
	none(t, links[3], "status-badge")     // idle: no badge

	list := one(t, html, "conversations")
	if got := len(byTestID(list, "conv-link")); got != 4 {
		t.Errorf("home list: got %d links, want 4", got)
	}
	form := one(t, html, "composer")
	contains(t, form, `method="post"`, `action="/send"`, `name="csrf" value="tok123"`, `name="text"`)
	if strings.Contains(form, "conversation_id") {
		t.Errorf("home composer has a conversation_id:\n%s", form)
	}
}

func TestNoBannerWhenEmpty(t *testing.T) {
	none(t, render(t, HomePage(HomeView{Shell: shell()})), "banner")
}

func TestConversationPage(t *testing.T) {
	v := conversationView()
	html := render(t, ConversationPage(v))

	contains(t, html, `data-conversation="web-20261130"`, `data-last-seq="41"`, `<title>Newest — my-agent-crew</title>`)
	contains(t, one(t, html, "runs-link"), `href="/c/web-20261130/runs"`)
	contains(t, one(t, html, "export-link"), `href="/api/conversations/web-20261130/export"`)
	contains(t, one(t, html, "conv-status"), "running")
	contains(t, one(t, one(t, html, "sidebar"), "conv-list"), `aria-current="page"`)

	chat := one(t, html, "chat")
	if !strings.HasPrefix(chat, `<div id="chat"`) {
		t.Errorf("chat does not start with its element: %.60s", chat)
	}
	if got := text(one(t, chat, "msg-user")); !strings.Contains(got, "Plan my run") {
		t.Errorf("user message: %q", got)
	}
	contains(t, one(t, chat, "msg-assistant"), "<p><strong>Sure</strong></p>")
	contains(t, text(one(t, chat, "msg-queued")), "queued", "and tomorrow?")
	contains(t, text(one(t, chat, "note")), "Steered: go slower")

	cards := byTestID(chat, "tool-card")
	if len(cards) != 4 {
		t.Fatalf("tool cards: got %d, want 4", len(cards))
	}
	for i, want := range []string{"done", "denied", "error", "running…"} {
		if got := text(one(t, cards[i], "tool-status")); got != want {
			t.Errorf("card %d status: got %q, want %q", i, got, want)
		}
	}
	if !strings.HasPrefix(cards[0], "<details") {
		t.Errorf("tool card is not a <details>: %.40s", cards[0])
	}
	contains(t, cards[0], `<summary>`, "fetch_url")
	contains(t, one(t, cards[0], "tool-args"), "<pre", "https://example.com")
	contains(t, one(t, cards[0], "tool-output"), "<pre", "200 OK")

	contains(t, one(t, chat, "live-reply"), "hidden")
	contains(t, one(t, chat, "live-tool"), "<pre", "hidden")
	end := one(t, chat, "run-ending")
	contains(t, end, `data-kind="halted"`, `data-reason="max_steps"`, `role="status"`)
	contains(t, text(one(t, end, "run-ending-text")), "(max_steps)", "send a message")
	contains(t, text(one(t, end, "run-ending-spend")), "$0.0012")

	bar := one(t, chat, "approval-bar")
	contains(t, text(one(t, bar, "approval-tool")), "shell")
	contains(t, one(t, bar, "approval-args"), "&#34;cmd&#34;: &#34;ls&#34;")
	contains(t, text(one(t, bar, "approval-reason")), "shell is gated")
	left := one(t, bar, "approval-time-left")
	contains(t, left, `data-expires="2026-11-30T08:11:00Z"`, "9m 12s left")
	forms := regexp.MustCompile(`<form`).FindAllString(bar, -1)
	if len(forms) != 1 {
		t.Errorf("approval bar: got %d forms, want 1", len(forms))
	}
	contains(t, bar, `method="post" action="/approvals/ap1/decide"`,
		`name="csrf" value="tok123"`, `name="back" value="/c/web-20261130"`)
	for id, value := range map[string]string{"approve": "approve", "approve-always": "always", "deny": "deny"} {
		contains(t, one(t, bar, id), `name="decision"`, `value="`+value+`"`)
	}

	form := one(t, html, "composer")
	contains(t, form, `action="/send"`, `name="conversation_id" value="web-20261130"`, `name="csrf" value="tok123"`)
	contains(t, one(t, form, "composer-text"), "<textarea", `name="text"`)
	contains(t, one(t, form, "composer-send"), "Send")
	contains(t, one(t, form, "composer-error"), "hidden")
	contains(t, form, "/steer &lt;text&gt;")
}

func TestChatFragment(t *testing.T) {
	v := conversationView()
	v.Approval, v.Ending, v.Items = nil, nil, nil
	v.Conv.Status = "idle"
	html := render(t, ChatFragment(v))

	if !strings.HasPrefix(html, `<div id="chat"`) || strings.Contains(html, "<html") {
		t.Errorf("fragment is not one #chat element: %.80s", html)
	}
	if got := one(t, html, "chat"); got != html {
		t.Errorf("fragment has content outside #chat")
	}
	for _, id := range []string{"approval-bar", "run-ending", "queued-note", "working", "sidebar", "composer"} {
		none(t, html, id)
	}
	one(t, html, "no-messages")
	one(t, html, "live-reply")

	v = conversationView()
	v.Approval.Reason = ""
	v.Approval.ExpiresIn = "expired"
	html = render(t, ChatFragment(v))
	none(t, html, "approval-reason")
	if got := text(one(t, html, "approval-time-left")); got != "expired" {
		t.Errorf("time left: got %q, want expired", got)
	}
}

func runsView() RunsView {
	sh := shell()
	child := RunCard{ID: "r2", Agent: "coach", Trigger: "delegate", Status: "done",
		Steps:    []StepCard{{N: 1, ModelCalls: []ModelCallLine{{Route: "openai:mini", Model: "gpt-x", Tokens: "10 in / 2 out", Cost: "unknown"}}}},
		Children: []RunCard{{ID: "r3", Agent: "coach", Trigger: "delegate", Status: "failed", Error: "boom"}},
	}
	return RunsView{Shell: sh, Conv: sh.Conversations[0], Runs: []RunCard{{
		ID: "r1", Agent: "master", Trigger: "message", Status: "halted", Reason: "max_steps",
		Started: "08:01:02", Duration: "4.2s", Tokens: "1,234 in / 56 out", Cost: "$0.0012",
		Steps: []StepCard{
			{N: 1, ModelCalls: []ModelCallLine{
				{Route: "anthropic:sonnet", Error: "529 overloaded", Latency: "1.2s"},
				{Route: "fake:echo", Model: "echo", Tokens: "12 in / 3 out", Cost: "$0.0001", Latency: "3ms",
					Text: strings.Repeat("long text ", 100), Tools: "shell, fetch_url"},
			},
				ToolCalls: []ToolCard{{CallID: "c1", Tool: "shell", Args: `{"cmd":"ls"}`, Output: "a b"}},
				Lines:     []string{"fallback anthropic:sonnet → fake:echo: 529 overloaded", "approval shell: approved"}},
			{N: 2, Lines: []string{"reminder: you repeat yourself"}},
		},
		Children: []RunCard{child},
	}}}
}

func TestRunsPage(t *testing.T) {
	html := render(t, RunsPage(runsView()))
	runs := one(t, html, "runs")
	all := byTestID(runs, "run")
	if len(all) != 3 {
		t.Fatalf("runs, nested included: got %d, want 3", len(all))
	}
	top := all[0]
	contains(t, top, `data-run-id="r1"`)
	contains(t, text(top), "halted", "master", "message", "08:01:02", "4.2s", "1,234 in / 56 out", "$0.0012", "max_steps")

	kids := byTestID(top, "child-runs")
	if len(kids) != 2 {
		t.Fatalf("child-runs blocks: got %d, want 2 (r1's and r2's)", len(kids))
	}
	contains(t, kids[0], `data-run-id="r2"`, `data-run-id="r3"`, "boom")
	contains(t, kids[1], `data-run-id="r3"`)

	steps := byTestID(top, "step")
	if len(steps) != 3 { // r1 has two, r2 one
		t.Fatalf("steps: got %d, want 3", len(steps))
	}
	calls := byTestID(steps[0], "model-call")
	if len(calls) != 2 {
		t.Fatalf("model calls of step 1: got %d, want 2", len(calls))
	}
	contains(t, text(calls[0]), "anthropic:sonnet", "529 overloaded", "1.2s")
	contains(t, text(calls[1]), "fake:echo", "echo", "12 in / 3 out", "$0.0001", "3ms", "shell, fetch_url", "…")
	if got := len(text(one(t, calls[1], "mc-text"))); got > 3*maxModelText {
		t.Errorf("model text not cut: %d bytes", got)
	}
	one(t, steps[0], "tool-card")
	if got := len(byTestID(steps[0], "step-line")); got != 2 {
		t.Errorf("step lines: got %d, want 2", got)
	}
	contains(t, text(one(t, steps[1], "step-line")), "reminder")
	contains(t, one(t, html, "chat-link"), `href="/c/web-20261130"`)

	empty := render(t, RunsPage(RunsView{Shell: shell(), Conv: ConversationRow{ID: "x"}}))
	one(t, empty, "no-runs")
}

func TestLoginPage(t *testing.T) {
	html := render(t, LoginPage(LoginView{CSRF: "c1", Error: "wrong token"}))
	form := one(t, html, "login-form")
	contains(t, form, `method="post"`, `action="/login"`, `name="csrf" value="c1"`)
	contains(t, one(t, form, "login-token"), `type="password"`, `name="token"`)
	contains(t, text(one(t, form, "login-error")), "wrong token")
	contains(t, html, `<meta name="viewport"`, `href="/static/app.css"`, `src="/static/app.js"`, `data-last-seq="0"`)
	none(t, html, "sidebar")
	none(t, render(t, LoginPage(LoginView{})), "login-error")
}

const evil = `<script>alert(1)</script><img src=x onerror="alert(2)">`

func TestEscaping(t *testing.T) {
	v := conversationView()
	v.Conv.Title, v.Shell.Title, v.Ending.Text = evil, evil, evil
	v.Shell.Conversations[0].Title = evil
	v.Shell.Banner = evil
	v.Shell.Agents[0].Description = evil
	v.Items = []Item{
		{Kind: ItemUser, Text: evil},
		{Kind: ItemUser, Text: evil, Queued: true},
		{Kind: ItemAssistant, Text: evil}, // no HTML: the source is shown escaped
		{Kind: ItemNote, Text: evil},
		{Kind: ItemTool, Tool: &ToolCard{Tool: evil, Args: evil, Output: evil, Outcome: evil}},
		{Kind: ItemTool, Tool: &ToolCard{Tool: "shell_run", Output: evil, Blocks: []ArgBlock{{Name: "command", Text: evil}}}},
	}
	v.Approval.Tool, v.Approval.Args, v.Approval.Reason = evil, evil, evil
	v.Approval.Blocks = []ArgBlock{{Name: "command", Text: evil}}
	rv := runsView()
	rv.Conv.Title = evil
	rv.Runs[0].Error, rv.Runs[0].Steps[0].Lines = evil, []string{evil}
	rv.Runs[0].Steps[0].ModelCalls[0].Text = evil

	pages := map[string]string{
		"conversation": render(t, ConversationPage(v)),
		"runs":         render(t, RunsPage(rv)),
		"login":        render(t, LoginPage(LoginView{Error: evil, CSRF: evil})),
	}
	for name, html := range pages {
		if strings.Contains(html, "<script>alert") || strings.Contains(html, "<img") {
			t.Errorf("%s: markup from data was rendered live", name)
		}
		contains(t, html, "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img")
	}
	for _, id := range []string{"msg-user", "msg-queued", "msg-assistant", "note", "tool-args", "tool-output", "conv-title", "run-ending", "approval-args", "arg-text", "banner"} {
		for _, el := range byTestID(pages["conversation"], id) {
			contains(t, el, "&lt;script&gt;")
		}
	}
}

// TestNoInlineCode holds every page to the CSP: default-src 'self' with no
// 'unsafe-inline' blocks inline scripts, style attributes and handlers.
func TestNoInlineCode(t *testing.T) {
	sh := shell()
	sh.Banner = "banner"
	pages := map[string]string{
		"home":         render(t, HomePage(HomeView{Shell: sh, Conversations: sh.Conversations})),
		"conversation": render(t, ConversationPage(conversationView())),
		"fragment":     render(t, ChatFragment(conversationView())),
		"sidebar":      render(t, Sidebar(sh)),
		"runs":         render(t, RunsPage(runsView())),
		"login":        render(t, LoginPage(LoginView{Error: "x"})),
	}
	script := regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`)
	tag := regexp.MustCompile(`<[a-zA-Z][^>]*>`)
	bad := regexp.MustCompile(`(?i)\s(style|on[a-z]+)\s*=|javascript:`)
	for name, html := range pages {
		for _, m := range script.FindAllStringSubmatch(html, -1) {
			if strings.TrimSpace(m[2]) != "" || !strings.Contains(m[1], `src="/static/`) {
				t.Errorf("%s: inline or foreign script: %s", name, m[0])
			}
		}
		if strings.Contains(strings.ToLower(html), "<style") {
			t.Errorf("%s: has a <style> element", name)
		}
		for _, tg := range tag.FindAllString(html, -1) {
			if bad.MatchString(tg) {
				t.Errorf("%s: inline code in tag %s", name, tg)
			}
		}
		if strings.Contains(html, "//") && regexp.MustCompile(`(src|href)="(https?:)?//`).MatchString(html) {
			t.Errorf("%s: loads from another origin", name)
		}
	}
}

func TestStatic(t *testing.T) {
	srv := httptest.NewServer(http.FileServerFS(Static()))
	defer srv.Close()
	for path, want := range map[string]struct{ ctype, body string }{
		"/app.js":      {"text/javascript", "'use strict'"},
		"/app.css":     {"text/css", "prefers-color-scheme"},
		"/favicon.svg": {"image/svg+xml", "<svg"},
	} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d", path, res.StatusCode)
		}
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, want.ctype) {
			t.Errorf("%s: content type %q, want %s", path, ct, want.ctype)
		}
		contains(t, string(body), want.body)
	}
	js, _ := io.ReadAll(must(Static().Open("app.js")))
	for _, want := range []string{"/api/stream?conversation=", "/api/activity", "/fragment", "/fragments/sidebar", "composer-error", "approval-time-left"} {
		contains(t, string(js), want)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestToolStatus(t *testing.T) {
	for _, tc := range []struct {
		card ToolCard
		want string
	}{
		{ToolCard{}, "done"},
		{ToolCard{Running: true}, "running…"},
		{ToolCard{IsError: true}, "error"},
		{ToolCard{IsError: true, Outcome: "expired"}, "expired"},
		{ToolCard{Outcome: "max_steps"}, "max steps"},
	} {
		if got := toolStatus(tc.card); got != tc.want {
			t.Errorf("toolStatus(%+v) = %q, want %q", tc.card, got, tc.want)
		}
	}
}

func TestTimeLeft(t *testing.T) {
	for in, want := range map[string]string{"9m 12s": "9m 12s left", "4m 05s left": "4m 05s left", "expired": "expired", "": ""} {
		if got := timeLeft(in); got != want {
			t.Errorf("timeLeft(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFailedRunShownInChat (issue 10 item 8): a failed run's notice is in
// the chat in plain words with its spend, and the status pill says failed.
func TestFailedRunShownInChat(t *testing.T) {
	v := conversationView()
	v.Approval, v.Conv.Status = nil, "failed"
	v.Ending = &RunEnding{Kind: "failed", Status: "failed", Reason: "model_error", Spend: "$0.0000",
		Text: "Every model route failed: 401 from openrouter — check OPENROUTER_API_KEY in /home/me/.crew/env."}
	html := render(t, ConversationPage(v))
	pill := one(t, html, "conv-status")
	contains(t, pill, `data-status="failed"`, "status-failed")
	if got := text(pill); got != "failed" {
		t.Errorf("status pill = %q, want failed", got)
	}
	end := one(t, one(t, html, "chat"), "run-ending")
	contains(t, end, `data-kind="failed"`, `data-status="failed"`, `data-reason="model_error"`, "run-ending-failed")
	if got := text(one(t, end, "run-ending-text")); got != v.Ending.Text {
		t.Errorf("notice = %q, want %q", got, v.Ending.Text)
	}
	contains(t, text(one(t, end, "run-ending-spend")), "Spend: $0.0000.")
	none(t, html, "working")
}

// TestQueuedNoteShown (issue 10 item 8): messages waiting behind the
// running turn are acknowledged in the chat.
func TestQueuedNoteShown(t *testing.T) {
	v := conversationView()
	v.Approval, v.Ending, v.Waiting = nil, nil, 2
	html := render(t, ChatFragment(v))
	if got := text(one(t, html, "queued-note")); !strings.HasPrefix(got, "queued: 2 waiting") {
		t.Errorf("queued note = %q, want it to start with \"queued: 2 waiting\"", got)
	}
}

// TestApprovalCardShowsCommandReadably (issue 10 item 10): a command is a
// code block with its real line break and its > as text (escaped once,
// by the renderer), not JSON with \n or \u003e.
func TestApprovalCardShowsCommandReadably(t *testing.T) {
	v := conversationView()
	v.Approval.Args = "{\n  \"timeout_seconds\": 30\n}"
	v.Approval.Blocks = []ArgBlock{{Name: "command", Text: "echo hi > out.txt\ncat out.txt"}}
	bar := one(t, render(t, ChatFragment(v)), "approval-bar")
	block := one(t, bar, "arg-block")
	contains(t, block, `data-arg="command"`, "<pre><code", "echo hi &gt; out.txt\ncat out.txt")
	for _, bad := range []string{`\n`, `\u003e`, `&amp;gt;`, `\"`} {
		if strings.Contains(block, bad) {
			t.Errorf("the command block holds %q:\n%s", bad, block)
		}
	}
	contains(t, one(t, bar, "approval-args"), "timeout_seconds")
	// Only text arguments: no empty JSON box beside them.
	v.Approval.Args = ""
	none(t, render(t, ChatFragment(v)), "approval-args")
}

// TestDeniedAndExpiredLabels (issue 10 item 10): a call waiting for its
// approval says so, and denied and expired calls say denied and expired,
// not error, styled apart from errors.
func TestDeniedAndExpiredLabels(t *testing.T) {
	for _, tc := range []struct {
		card       ToolCard
		label, cls string
	}{
		{ToolCard{CallID: "w", Waiting: true}, "waiting for your approval", "tool-waiting"},
		{ToolCard{CallID: "d", IsError: true, Outcome: "denied"}, "denied", "tool-denied"},
		{ToolCard{CallID: "e", IsError: true, Outcome: "expired"}, "expired", "tool-denied"},
		{ToolCard{CallID: "x", IsError: true}, "error", "tool-error"},
	} {
		v := conversationView()
		v.Approval, v.Ending = nil, nil
		c := tc.card
		v.Items = []Item{{Kind: ItemTool, Tool: &c}}
		card := one(t, render(t, ChatFragment(v)), "tool-card")
		if got := text(one(t, card, "tool-status")); got != tc.label {
			t.Errorf("%s: label %q, want %q", c.CallID, got, tc.label)
		}
		contains(t, card, tc.cls)
		rv := runsView()
		rv.Runs[0].Steps[0].ToolCalls = []ToolCard{c}
		if got := text(one(t, one(t, render(t, RunsPage(rv)), "tool-card"), "tool-status")); got != tc.label {
			t.Errorf("%s on the runs page: label %q, want %q", c.CallID, got, tc.label)
		}
	}
}
