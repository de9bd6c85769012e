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
	lock := filepath.Join(profile, "SingletonLock")
	deadline := time.Now().Add(c.Wait)
	for {
		if _, err := os.Lstat(lock); errors.Is(err, fs.ErrNotExist) {
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
	in := &instance{agent: c.Agent, proxy: px, ctx: bctx, cancel: func() {}, tabs: map[string]*convTabs{}}
	t, err := in.newTab("login")
	if err != nil {
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
	select {
	case <-bctx.Done(): // the owner closed the window: Chromium exited
	case <-ctx.Done():
	}
	fmt.Fprintln(c.Out, "Window closed; the agent's browser starts again on its next browser call.")
	return nil
}
