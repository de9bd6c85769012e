package browser

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"golang.org/x/text/unicode/norm"

	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/fence"
)

// Names of the browser tools. Read are every browser agent's; Act only
// come with browser: act.
var (
	ReadTools = []string{"browser_navigate", "browser_snapshot", "browser_text", "browser_tabs", "browser_screenshot", "browser_pdf"}
	ActTools  = []string{"browser_act", "browser_download"}
)

// ToolNames are the tools an agent with browser: mode gets.
func ToolNames(mode string) []string {
	switch mode {
	case "read":
		return ReadTools
	case "act":
		return append(append([]string{}, ReadTools...), ActTools...)
	}
	return nil
}

// Grant is what agent.yaml's browser: mode gives an agent: ToolNames(mode)
// when config.yaml enables the browser (enabled) and this machine has a
// Chromium (Find). Browser tools listed under tools: never count.
func Grant(enabled bool, mode string) tools.Grant {
	g := tools.Grant{Family: "browser_"}
	if enabled && mode != "" && Find() != "" {
		g.Names = ToolNames(mode)
	}
	return g
}

// Tools returns the eight browser tools on m (nil: each says the browser
// is not available), for tools.New.
func Tools(m *Manager) []tools.Tool {
	b := base{m}
	return []tools.Tool{
		tools.NewFunc[navigateArgs](Navigate{b}), tools.NewFunc[noArgs](Snapshot{b}), tools.NewFunc[noArgs](Text{b}),
		tools.NewFunc[tabsArgs](Tabs{b}), tools.NewFunc[screenshotArgs](Screenshot{b}), tools.NewFunc[pdfArgs](PDF{b}),
		tools.NewFunc[actArgs](Act{b}), tools.NewFunc[downloadArgs](Download{b}),
	}
}

// DefaultAskPatterns make browser_act and browser_download ask, even in
// an autonomous conversation, when the element's name matches (matched
// case-insensitively after Unicode normalisation). browser_ask_patterns
// adds to them.
var DefaultAskPatterns = []string{
	`\b(pay|payment|buy|purchase|checkout|check out|place order|order now|subscribe|donate|transfer|send money|withdraw|delete|remove|erase|unsubscribe|close account|confirm)\b`,
	`thanh toán|mua|đặt hàng|đặt mua|xoá|xóa|gỡ bỏ|chuyển khoản|chuyển tiền|rút tiền|huỷ|hủy|đăng ký|xác nhận`,
}

// askPattern returns the first pattern matching name; an invalid pattern
// matches (fail closed). The compiled patterns are the process's bounded
// memo (tools.CompilePattern).
func askPattern(extra []string, name string) (string, bool) {
	name = norm.NFC.String(name)
	for _, p := range append(append([]string{}, DefaultAskPatterns...), extra...) {
		re, err := tools.CompilePattern("(?i)" + norm.NFC.String(p))
		if err != nil || re.MatchString(name) {
			return p, true
		}
	}
	return "", false
}

// hostListed reports whether u's host is one of hosts: a name matches
// itself and its subdomains; host:port only on that port.
func hostListed(hosts []string, u *url.URL) bool {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		hp := ""
		if hh, pp, err := net.SplitHostPort(h); err == nil {
			h, hp = hh, pp
		}
		h = strings.TrimSuffix(h, ".")
		if h == "" || (hp != "" && hp != port) {
			continue
		}
		if host == h || strings.HasSuffix(host, "."+h) {
			return true
		}
	}
	return false
}

// base is what every browser tool shares: the manager.
type base struct{ m *Manager }

// run runs fn on the agent's browser; a browser that cannot be used is a
// failure the model reads.
func (b base) run(ctx context.Context, env tools.Env, name string, fn func(in *instance) (tools.Result, error)) (tools.Result, error) {
	if b.m == nil {
		return tools.Failf("%s: the browser is not available on this crew (browser_enabled is off, or no Chromium)", name), nil
	}
	var res tools.Result
	err := b.m.use(ctx, env.AgentID, func(in *instance) error {
		var err error
		res, err = fn(in)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		return tools.Failf("%s: %v", name, err), nil
	}
	return res, nil
}

// errNoTab: the conversation has no tab.
var errNoTab = errors.New("no tab is open in this conversation: call browser_navigate first")

// currentTab is the conversation's current tab.
func currentTab(in *instance, env tools.Env) (*tab, error) {
	in.tabsMu.RLock()
	defer in.tabsMu.RUnlock()
	if t := in.current(env.Conversation); t != nil {
		return t, nil
	}
	return nil, errNoTab
}

// refOf looks ref up in the conversation's current outline without
// starting a browser, for the gate's questions.
func (m *Manager) refOf(agent, conv, ref string) (element, bool) {
	if m == nil {
		return element{}, false
	}
	m.mu.Lock()
	in := m.live[agent]
	m.mu.Unlock()
	if in == nil {
		return element{}, false
	}
	in.tabsMu.RLock()
	t := in.current(conv)
	in.tabsMu.RUnlock()
	if t == nil {
		return element{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.refs[ref]
	return e, ok
}

// outline reads t's accessibility tree, keeps its refs and returns the
// outline text.
func outline(ctx context.Context, t *tab) (string, error) {
	gen := t.generation()
	res, err := chromedp.Call(t.ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		return "", fmt.Errorf("read the page: %w", err)
	}
	text, refs := buildOutline(res.Nodes)
	_, u := targetInfo(t)
	t.mu.Lock()
	t.refs, t.refsGen, t.refsURL = refs, gen, u
	t.mu.Unlock()
	return text, nil
}

// pageResult describes t (tab number, title, URL, anything the wall
// refused since the last call) and, with withOutline, its outline fenced.
func pageResult(ctx context.Context, in *instance, env tools.Env, t *tab, lead string, withOutline bool) (tools.Result, error) {
	settle(ctx, t)
	title, u := targetInfo(t)
	var b strings.Builder
	if lead != "" {
		b.WriteString(lead + "\n")
	}
	n, total := tabIndex(in, env.Conversation, t)
	// The page chose its title and address: the address is shown as one
	// inert token, the title only inside the fence (R-SEC-1).
	fmt.Fprintf(&b, "Tab %d of %d\nURL: %s\n", n, total, fence.Link(u))
	blockedPage := false
	seen := map[string]bool{}
	for _, r := range in.proxy.takeRefusals() {
		if t.requested(r.hostPort) && !seen[r.msg] {
			seen[r.msg] = true
			b.WriteString("Blocked: " + r.msg + "\n")
			blockedPage = blockedPage || hostPortOf(u) == r.hostPort
		}
	}
	if blockedPage {
		b.WriteString("The page itself was refused by the crew's network wall; it shows the refusal, not the site.\n")
	}
	meta := map[string]any{"url": u, "title": title, "tab": n}
	heading := "Title: " + oneLine(title) + "\n"
	if !withOutline {
		b.WriteString(fence.Wrap(fence.Link(u), heading))
	} else {
		o, err := outline(ctx, t)
		if err != nil {
			return tools.Failf("%v", err), nil
		}
		if strings.TrimSpace(o) == "" {
			o = "(the page is empty)"
		}
		b.WriteString("\nThe page's title and outline (act on an element by its [ref]):\n" + fence.Wrap(fence.Link(u), heading+"\n"+o))
		meta["outline"] = true
	}
	return tools.Result{Output: b.String(), Meta: meta, IsError: blockedPage}, nil
}

func tabIndex(in *instance, conv string, t *tab) (int, int) {
	in.tabsMu.RLock()
	defer in.tabsMu.RUnlock()
	ct := in.tabs[conv]
	if ct == nil {
		return 0, 0
	}
	for i, x := range ct.list {
		if x == t {
			return i + 1, len(ct.list)
		}
	}
	return 0, len(ct.list)
}

// settle waits, briefly, for the document to finish loading after an
// action.
func settle(ctx context.Context, t *tab) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		state, err := chromedp.Run(t.ctx, chromedp.Evaluate[string]("document.readyState"))
		if err != nil || state == "complete" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fresh checks that ref is still what the outline showed: the same page
// (no main-frame navigation since), and an element with the same role and
// name. It returns the element.
func fresh(t *tab, ref string) (element, error) {
	t.mu.Lock()
	e, ok := t.refs[ref]
	gen, u := t.refsGen, t.refsURL
	t.mu.Unlock()
	if !ok {
		return e, fmt.Errorf("%s is not a ref of this tab's last outline; call browser_snapshot", ref)
	}
	if t.generation() != gen {
		_, now := targetInfo(t)
		return e, fmt.Errorf("the page changed since the outline (it was %s, now %s); nothing was done: call browser_snapshot for fresh refs", u, now)
	}
	res, err := chromedp.Call(t.ctx, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{BackendNodeID: e.Backend, FetchRelatives: new(false)})
	if err != nil || len(res.Nodes) == 0 {
		return e, fmt.Errorf("%s (%s %q) is no longer on the page; nothing was done: call browser_snapshot", ref, e.Role, e.Name)
	}
	n := res.Nodes[0]
	role, name := axString(n.Role), oneLine(axString(n.Name))
	if role != e.Role || name != e.Name {
		return e, fmt.Errorf("element changed since the outline: %s was %s %q, now %s %q; nothing was done: call browser_snapshot", ref, e.Role, e.Name, role, name)
	}
	return e, nil
}

// callOn runs a JavaScript function on the element.
func callOn[T any](t *tab, backend cdp.BackendNodeID, fn string, args ...any) (T, error) {
	var zero T
	obj, err := chromedp.Call(t.ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: backend})
	if err != nil || obj.Object == nil {
		return zero, fmt.Errorf("the element is gone: %v", err)
	}
	defer chromedp.Call(t.ctx, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: obj.Object.ObjectID})
	return chromedp.Run(t.ctx, chromedp.CallFunctionOn[T](fn, func(p *runtime.CallFunctionOnParams) { p.ObjectID = obj.Object.ObjectID }, args...))
}

// click clicks the element as a mouse would, at its centre.
func click(t *tab, backend cdp.BackendNodeID) error {
	chromedp.Call(t.ctx, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: backend})
	q, err := chromedp.Call(t.ctx, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: backend})
	if err == nil && len(q.Quads) > 0 && len(q.Quads[0]) == 8 {
		c := q.Quads[0]
		x, y := (c[0]+c[2]+c[4]+c[6])/4, (c[1]+c[3]+c[5]+c[7])/4
		return chromedp.Do(t.ctx, chromedp.MouseClickXY(x, y))
	}
	_, err = callOn[bool](t, backend, `function(){ this.click(); return true }`)
	return err
}

// urlArg parses a browser URL argument.
func urlArg(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL", s)
	}
	if u.User != nil {
		return nil, errors.New("a URL with a user name or password is refused (the owner signs in with crew browser login)")
	}
	return u, nil
}
