package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/my-agent-crew/crew/tools/web/wall"
)

// LoginConfig is what crew browser login runs with.
type LoginConfig struct {
	Home, Agent, URL string
	Chromium         string // "" means Find()
	Getenv           func(string) string
	Out              io.Writer
	// Wait is how long to wait for the agent's running browser to stop.
	Wait time.Duration
}

// Login opens a headed Chromium on the agent's profile, behind the same
// wall, for the owner to sign in; it returns when the window is closed.
// While it is open a marker in <home>/browser/ makes the agent's browser
// stop and its tools refuse, saying why (one profile, one browser).
func Login(ctx context.Context, c LoginConfig) error {
	if c.Getenv("DISPLAY") == "" && c.Getenv("WAYLAND_DISPLAY") == "" {
		return errors.New("a login window needs a display, and neither DISPLAY nor WAYLAND_DISPLAY is set: run it in the desktop session of the machine the crew runs on (or over ssh -X)")
	}
	if c.Chromium == "" {
		c.Chromium = Find()
	}
	if c.Chromium == "" {
		return errors.New("no Chromium on this machine (install chromium)")
	}
	if c.Wait <= 0 {
		c.Wait = 30 * time.Second
	}
	profile := ProfileDir(c.Home, c.Agent)
	if err := os.MkdirAll(profile, 0o700); err != nil {
		return err
	}
	marker := loginMarker(c.Home, c.Agent)
	if pid, held := LoginHeld(c.Home, c.Agent); held {
		return fmt.Errorf("a login window is already open on %s's profile (pid %d)", c.Agent, pid)
	}
	if err := os.WriteFile(marker, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return err
	}
	defer os.Remove(marker)
	// The server's browser for this agent sees the marker and stops;
	// Chromium removes SingletonLock from the profile as it exits.
	fmt.Fprintf(c.Out, "Waiting for %s's browser to stop…\n", c.Agent)
	deadline := time.Now().Add(c.Wait)
	for {
		if !profileInUse(profile) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is still in use by a browser after %s (is another Chromium open on it?)", profile, c.Wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	px, err := newProxy(wall.New())
	if err != nil {
		return err
	}
	defer px.Close()
	actx, acancel := chromedp.NewExecAllocator(ctx, Options(c.Chromium, profile, px.Addr(), false)...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if err := chromedp.Do(bctx); err != nil { // starts the browser, bound to bctx
		return fmt.Errorf("open the login window: %w", err)
	}
	in := &instance{agent: c.Agent, proxy: px, ctx: bctx, cancel: func() {}, tabs: map[string]*convTabs{}}
	t := &tab{ctx: bctx, cancel: func() {}}
	if err := in.attach(bctx, t); err != nil {
		return fmt.Errorf("open the login window: %w", err)
	}
	if c.URL != "" {
		if _, err := urlArg(c.URL); err != nil {
			return err
		}
		if err := chromedp.Do(t.ctx, chromedp.Navigate(c.URL)); err != nil {
			fmt.Fprintf(c.Out, "%s did not load: %v\n", c.URL, err)
		}
	}
	fmt.Fprintf(c.Out, "A window is open on %s's browser profile. Sign in, then close the window; until then %s's browser tools refuse and say why.\n", c.Agent, c.Agent)
	// The owner closing the window ends Chromium; chromedp reaps it, and
	// then the process answers no signal.
	proc := chromedp.FromContext(bctx).Browser.Process()
	for proc != nil && proc.Signal(syscall.Signal(0)) == nil && ctx.Err() == nil && bctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-bctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
	fmt.Fprintln(c.Out, "Window closed; the agent's browser starts again on its next browser call.")
	return nil
}

// profileInUse reports whether a live Chromium holds profile: its
// SingletonLock names host-pid, and a lock left by a process that died
// (on this host) does not count.
func profileInUse(profile string) bool {
	target, err := os.Readlink(filepath.Join(profile, "SingletonLock"))
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(target, '-')
	host, _ := os.Hostname()
	pid, perr := strconv.Atoi(target[i+1:])
	if i < 0 || perr != nil || target[:i] != host {
		return true // another host's lock, or one we cannot read: in use
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
