// Package browser gives agents a real browser (R-BRW): one Chromium per
// agent with its profile in <home>/browser/<agent>/, started on first use
// and closed when idle, whose every request goes through an in-process
// proxy on the crew's one guarded dialer (tools/web/wall). Tabs belong to
// the conversation that opened them. The model sees pages as an outline
// of the accessibility tree, one ref per interactive element, fenced as
// data (tools/fence); it acts by ref, and only while the element is still
// what it was shown.
package browser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/my-agent-crew/crew/tools/web/wall"
)

// chromiumNames are the executables Find looks for, in order.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless-shell"}

// Find returns the path of the Chromium this machine has, or "".
func Find() string {
	for _, n := range chromiumNames {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// ProfileDir is agent's browser profile in the home.
func ProfileDir(home, agent string) string { return filepath.Join(home, "browser", agent) }

// loginMarker is the file crew browser login holds while its window is
// open on agent's profile.
func loginMarker(home, agent string) string { return filepath.Join(home, "browser", agent+".login") }

// Config is what a Manager runs with.
type Config struct {
	Home      string
	Chromium  string        // executable; "" means Find()
	Wall      *wall.Wall    // nil: wall.New()
	IdleAfter time.Duration // close a browser unused this long; 0: 10 minutes
	Logger    *slog.Logger
}

// Manager holds one browser per agent.
type Manager struct {
	cfg  Config
	mu   sync.Mutex
	live map[string]*instance
	stop chan struct{}
	done chan struct{}
}

// NewManager returns a manager; browsers start on first use.
func NewManager(cfg Config) *Manager {
	if cfg.Chromium == "" {
		cfg.Chromium = Find()
	}
	if cfg.Wall == nil {
		cfg.Wall = wall.New()
	}
	if cfg.IdleAfter <= 0 {
		cfg.IdleAfter = 10 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg, live: map[string]*instance{}, stop: make(chan struct{}), done: make(chan struct{})}
	go m.reap()
	return m
}

// Close stops every browser.
func (m *Manager) Close() {
	if m == nil {
		return
	}
	close(m.stop)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, in := range m.live {
		in.close()
		delete(m.live, id)
	}
}

// Running reports whether agent's browser is running.
func (m *Manager) Running(agent string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live[agent] != nil
}

// reap closes browsers idle for IdleAfter and those whose profile the
// owner opened with crew browser login.
func (m *Manager) reap() {
	defer close(m.done)
	every := min(m.cfg.IdleAfter/4, 5*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		m.mu.Lock()
		for id, in := range m.live {
			_, login := LoginHeld(m.cfg.Home, id)
			if login || in.idleSince() > m.cfg.IdleAfter {
				m.cfg.Logger.Info("browser closed", "agent", id, "login", login)
				delete(m.live, id)
				go in.close() // waits for a call in progress
			}
		}
		m.mu.Unlock()
	}
}

// ErrLogin: the owner has the profile open in a login window.
var ErrLogin = errors.New("login window open")

// LoginHeld reports whether crew browser login holds agent's profile, and
// its pid.
func LoginHeld(home, agent string) (pid int, held bool) {
	b, err := os.ReadFile(loginMarker(home, agent))
	if err != nil {
		return 0, false
	}
	pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return pid, false // a login that died without cleaning up
	}
	return pid, true
}

// use runs fn on agent's browser, starting it if needed, one call at a
// time per browser.
func (m *Manager) use(ctx context.Context, agent string, fn func(*instance) error) error {
	if pid, held := LoginHeld(m.cfg.Home, agent); held {
		m.mu.Lock()
		if in := m.live[agent]; in != nil {
			delete(m.live, agent)
			go in.close()
		}
		m.mu.Unlock()
		return fmt.Errorf("%w: the owner is signing in to this agent's browser profile in a window opened by `crew browser login` (pid %d); the browser tools refuse until that window is closed", ErrLogin, pid)
	}
	m.mu.Lock()
	in := m.live[agent]
	if in == nil {
		var err error
		in, err = m.start(agent)
		if err != nil {
			m.mu.Unlock()
			return err
		}
		m.live[agent] = in
	}
	m.mu.Unlock()
	in.mu.Lock()
	defer in.mu.Unlock()
	in.busy = true
	defer func() { in.busy = false; in.last = time.Now() }()
	if in.closed {
		return errors.New("the browser was closed while idle; try again")
	}
	if in.ctx.Err() != nil {
		m.drop(agent, in)
		return errors.New("the browser stopped; the next call starts it again")
	}
	return fn(in)
}

func (m *Manager) drop(agent string, in *instance) {
	m.mu.Lock()
	if m.live[agent] == in {
		delete(m.live, agent)
	}
	m.mu.Unlock()
	go in.close()
}

// Options are the Chromium flags of an agent's browser: its profile, our
// proxy for everything (loopback included: without
// --proxy-bypass-list=<-loopback> Chromium sends loopback past the
// proxy), no QUIC, no WebRTC outside the proxy, no name resolution of its
// own, none of its background services.
func Options(chromium, profile, proxyAddr string, headless bool) []chromedp.ExecAllocatorOption {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(profile),
		chromedp.ProxyServer(proxyAddr),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"),
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("disable-features", "AutofillServerCommunication,OptimizationHints,MediaRouter,Translate"),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.WindowSize(1280, 900),
	}
	if headless {
		opts = append(opts, chromedp.Headless, chromedp.DisableGPU, chromedp.Flag("hide-scrollbars", true), chromedp.Flag("mute-audio", true))
	}
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses root without it
	}
	return opts
}

// start launches agent's Chromium behind a fresh proxy.
func (m *Manager) start(agent string) (*instance, error) {
	if m.cfg.Chromium == "" {
		return nil, errors.New("no Chromium on this machine (install chromium)")
	}
	profile := ProfileDir(m.cfg.Home, agent)
	if err := os.MkdirAll(profile, 0o700); err != nil {
		return nil, fmt.Errorf("browser profile: %w", err)
	}
	staging := filepath.Join(profile, ".crew-downloads")
	os.RemoveAll(staging)
	if err := os.MkdirAll(staging, 0o700); err != nil {
		return nil, fmt.Errorf("browser downloads: %w", err)
	}
	px, err := newProxy(m.cfg.Wall)
	if err != nil {
		return nil, err
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), Options(m.cfg.Chromium, profile, px.Addr(), true)...)
	bctx, bcancel := chromedp.NewContext(actx)
	in := &instance{agent: agent, proxy: px, ctx: bctx, cancel: func() { bcancel(); acancel() }, staging: staging,
		tabs: map[string]*convTabs{}, last: time.Now()}
	// The first Do starts the browser and its first tab, which we keep
	// blank: conversations open their own.
	// Its context must be bctx itself: the first Do binds the browser's
	// life to the context it is given.
	if err := chromedp.Do(bctx); err != nil {
		in.close()
		return nil, fmt.Errorf("start Chromium: %w", err)
	}
	if _, err := chromedp.CallBrowser(bctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{Behavior: cdpbrowser.SetDownloadBehaviorBehaviorDeny}); err != nil {
		in.close()
		return nil, fmt.Errorf("start Chromium: %w", err)
	}
	m.cfg.Logger.Info("browser started", "agent", agent)
	return in, nil
}

// instance is one agent's running browser.
type instance struct {
	agent   string
	proxy   *proxy
	ctx     context.Context // the browser's first tab
	cancel  func()
	staging string
	mu      sync.Mutex // one call at a time
	busy    bool
	last    time.Time
	closed  bool
	tabsMu  sync.RWMutex // tabs is read by the gate's questions too
	tabs    map[string]*convTabs
}

// convTabs are one conversation's tabs and which one is current.
type convTabs struct {
	list    []*tab
	current int
}

func (in *instance) idleSince() time.Duration {
	if !in.mu.TryLock() {
		return 0 // a call is running
	}
	defer in.mu.Unlock()
	return time.Since(in.last)
}

func (in *instance) close() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return
	}
	in.closed = true
	for _, ct := range in.tabs {
		for _, t := range ct.list {
			t.cancel()
		}
	}
	if in.cancel != nil {
		in.cancel()
	}
	if in.proxy != nil && in.proxy.srv != nil {
		in.proxy.Close()
	}
}

// tab is one page of a conversation.
type tab struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	gen    int // counts main-frame navigations
	// The last outline: its refs, and the navigation it was made on.
	refs    map[string]element
	refsGen int
	refsURL string
	// asked are the host:port pairs this tab's pages requested, so a
	// result reports the wall's refusals of its own requests and not
	// Chromium's background calls.
	asked map[string]bool
}

// note records that the tab requested rawURL.
func (t *tab) note(rawURL string) {
	hp := hostPortOf(rawURL)
	if hp == "" {
		return
	}
	t.mu.Lock()
	if t.asked == nil {
		t.asked = map[string]bool{}
	}
	t.asked[hp] = true
	t.mu.Unlock()
}

// hostPortOf is the host:port a URL connects to ("" if none).
func hostPortOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return ""
	}
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443"}[u.Scheme])
}

// requested reports whether the tab asked for host:port.
func (t *tab) requested(hostPort string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.asked[hostPort]
}

func (t *tab) generation() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gen
}

// current is conv's current tab, or nil.
func (in *instance) current(conv string) *tab {
	ct := in.tabs[conv]
	if ct == nil || len(ct.list) == 0 {
		return nil
	}
	return ct.list[ct.current]
}

// newTab opens a tab for conv and makes it current (see attach).
func (in *instance) newTab(conv string) (*tab, error) {
	ctx, cancel := chromedp.NewContext(in.ctx)
	t := &tab{ctx: ctx, cancel: cancel}
	// Subscribe before the target exists is not possible; create it first
	// with a blank page, then enable interception before any navigation.
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		return nil, fmt.Errorf("open a tab: %w", err)
	}
	if err := in.attach(ctx, t); err != nil {
		cancel()
		return nil, err
	}
	in.tabsMu.Lock()
	defer in.tabsMu.Unlock()
	ct := in.tabs[conv]
	if ct == nil {
		ct = &convTabs{}
		in.tabs[conv] = ct
	}
	ct.list = append(ct.list, t)
	ct.current = len(ct.list) - 1
	return t, nil
}

// attach makes the page of ctx answer the proxy's challenge with its
// credential (and only the proxy's), notes every host it requests, and
// counts its main-frame navigations, which make earlier refs stale.
func (in *instance) attach(ctx context.Context, t *tab) error {
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	auth := chromedp.Events(ctx, fetch.AuthRequired)
	navigated := chromedp.Events(ctx, page.FrameNavigated)
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{HandleAuthRequests: new(true), Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}}); err != nil {
		return fmt.Errorf("open a tab: %w", err)
	}
	if _, err := chromedp.Call(ctx, page.Enable, page.EnableParams{}); err != nil {
		return fmt.Errorf("open a tab: %w", err)
	}
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			if ev.Request != nil {
				t.note(ev.Request.URL)
			}
			go chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		}
	}()
	go func() {
		for ev, err := range auth {
			if err != nil {
				return
			}
			resp := &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseCancelAuth}
			if ev.AuthChallenge != nil && ev.AuthChallenge.Source == fetch.AuthChallengeSourceProxy {
				resp = &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseProvideCredentials, Username: in.proxy.user, Password: in.proxy.pass}
			}
			go chromedp.Call(ctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID, AuthChallengeResponse: resp})
		}
	}()
	go func() {
		for ev, err := range navigated {
			if err != nil {
				return
			}
			if ev.Frame != nil && ev.Frame.ParentID == "" {
				t.mu.Lock()
				t.gen++
				t.mu.Unlock()
			}
		}
	}()
	return nil
}

// closeTab closes conv's tab i.
func (in *instance) closeTab(conv string, i int) {
	in.tabsMu.Lock()
	defer in.tabsMu.Unlock()
	ct := in.tabs[conv]
	ct.list[i].cancel()
	ct.list = append(ct.list[:i], ct.list[i+1:]...)
	if ct.current >= len(ct.list) {
		ct.current = max(0, len(ct.list)-1)
	}
}

// targetInfo is a tab's title and URL.
func targetInfo(t *tab) (title, url string) {
	c := chromedp.FromContext(t.ctx)
	if c == nil || c.Target == nil {
		return "", ""
	}
	info, err := chromedp.CallBrowser(t.ctx, target.GetTargetInfo, target.GetTargetInfoParams{TargetID: c.Target.TargetID})
	if err != nil || info.TargetInfo == nil {
		return "", ""
	}
	return info.TargetInfo.Title, info.TargetInfo.URL
}
