package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jezek/xgb/xproto"

	"github.com/my-agent-crew/crew/desktop-helper/desktoptest"
	"github.com/my-agent-crew/crew/desktop-helper/wire"
)

// These tests run the helper in-process against a private Xvfb session
// (desktoptest) with gtk3-widget-factory in front, and talk to it over its
// socket like the server does. One session serves the whole test binary.

const factoryApp = "gtk3-widget-factory"

type fixture struct {
	sess   *desktoptest.Session
	h      *helper
	sock   string
	cancel context.CancelFunc
	done   chan struct{}
}

var (
	fx     *fixture
	fxErr  error
	fxOnce sync.Once
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fx != nil {
		fx.cancel()
		<-fx.done
		fx.h.Close()
	}
	if fx != nil && fx.sess != nil {
		fx.sess.Stop()
	}
	os.Exit(code)
}

// desktop returns the running session, helper and factory, starting them
// on first use.
func desktop(t *testing.T) *fixture {
	t.Helper()
	fxOnce.Do(func() { fx, fxErr = startFixture() })
	if fxErr != nil {
		if errors.Is(fxErr, desktoptest.ErrMissing) && !desktoptest.Required() {
			t.Skip(fxErr.Error())
		}
		t.Fatal(fxErr)
	}
	return fx
}

func startFixture() (*fixture, error) {
	f := &fixture{done: make(chan struct{})}
	s, err := desktoptest.Start()
	if err != nil {
		return nil, err
	}
	f.sess = s
	if _, err := s.StartFactory(); err != nil {
		return f, err
	}
	s.Setenv()
	home := filepath.Join(s.Home, ".my-agent-crew")
	srv, err := listen(home, slog.New(slog.DiscardHandler))
	if err != nil {
		return f, err
	}
	d, err := openDisplay()
	if err != nil {
		srv.Close()
		return f, err
	}
	f.h = newHelper(d, func() []string { return []string{factoryApp} })
	f.sock = srv.path
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	go func() { defer close(f.done); srv.serve(ctx, f.h) }() // owned: TestMain cancels and waits
	return f, nil
}

func (f *fixture) call(t *testing.T, req wire.Request) wire.Answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ans, err := wire.Call(ctx, f.sock, req)
	if err != nil {
		t.Fatalf("%s: %v", req.Op, err)
	}
	return ans
}

func (f *fixture) observe(t *testing.T) wire.Answer {
	t.Helper()
	ans := f.call(t, wire.Request{Op: wire.OpObserve})
	if ans.Error != "" || ans.FrameID == "" {
		t.Fatalf("observe: %+v", ans)
	}
	return ans
}

// allow makes the helper allow apps (as the home's computer_apps would)
// until the test ends, then the factory again.
func (f *fixture) allow(t *testing.T, apps ...string) {
	f.h.mu.Lock()
	f.h.allowed = func() []string { return apps }
	f.h.mu.Unlock()
	t.Cleanup(func() {
		f.h.mu.Lock()
		f.h.allowed = func() []string { return []string{factoryApp} }
		f.h.mu.Unlock()
	})
}

// act acts; with apps, the helper allows those for this act instead of
// the factory (as if the home's computer_apps said so).
func (f *fixture) act(t *testing.T, act wire.Act, apps ...string) wire.Answer {
	t.Helper()
	if apps != nil {
		f.h.mu.Lock()
		f.h.allowed = func() []string { return apps }
		f.h.mu.Unlock()
		defer func() {
			f.h.mu.Lock()
			f.h.allowed = func() []string { return []string{factoryApp} }
			f.h.mu.Unlock()
		}()
	}
	return f.call(t, wire.Request{Op: wire.OpAct, Act: &act})
}

// refWhere is the ref of the first outline line matching re, which must
// not be disabled.
func refWhere(t *testing.T, outline, re string) string {
	t.Helper()
	line := regexp.MustCompile(`(?m)^\s*- ` + re + `.*$`)
	ref := regexp.MustCompile(`\[ref=(e\d+)\]`)
	for _, l := range line.FindAllString(outline, -1) {
		if !strings.Contains(l, "disabled") {
			if m := ref.FindStringSubmatch(l); m != nil {
				return m[1]
			}
		}
	}
	t.Fatalf("no enabled element matching %q in the outline:\n%s", re, outline)
	return ""
}

// atspiOf reads an element of the latest outline straight from the
// accessibility bus, on a connection of its own.
func (f *fixture) atspiOf(t *testing.T, ref string) (states, string) {
	t.Helper()
	f.h.mu.Lock()
	tg, ok := f.h.out.refs[ref]
	f.h.mu.Unlock()
	if !ok {
		t.Fatalf("ref %s not in the outline", ref)
	}
	a, err := connectATSPI()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s, err := a.states(tg.node)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := a.text(tg.node)
	return s, text
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestObserveListsTheCheckboxAndTheEntryWithRefs (R-DSK): the outline of
// the app in front lists its check boxes and entries, each with a ref.
func TestObserveListsTheCheckboxAndTheEntryWithRefs(t *testing.T) {
	f := desktop(t)
	ans := f.observe(t)
	if ans.NoBridge {
		t.Fatalf("no bridge: %s", ans.Outline)
	}
	var box, entry bool
	for _, e := range ans.Refs {
		box = box || e.Role == "check box" && e.Name == "checkbutton"
		entry = entry || e.Role == "text"
	}
	if !box || !entry {
		t.Fatalf("refs %v lack a check box or an entry", ans.Refs)
	}
	refWhere(t, ans.Outline, `check box "checkbutton" \[ref=e\d+\]`)
	refWhere(t, ans.Outline, `text \[ref=e\d+\] \(editable\) value="entry"`)
	if ans.State == nil || ans.State.Frontmost == nil || !ans.State.Frontmost.Matches([]string{factoryApp}) {
		t.Fatalf("state %+v: want %s in front", ans.State, factoryApp)
	}
}

// TestClickOnARefTogglesTheCheckbox (R-DSK): a click at a ref lands on its
// element; AT-SPI's own state says the box changed.
func TestClickOnARefTogglesTheCheckbox(t *testing.T) {
	f := desktop(t)
	ans := f.observe(t)
	ref := refWhere(t, ans.Outline, `check box "checkbutton" \[ref=e\d+\]`)
	before, _ := f.atspiOf(t, ref)
	got := f.act(t, wire.Act{Action: wire.ActClick, FrameID: ans.FrameID, Ref: ref})
	if got.Error != "" {
		t.Fatalf("click: %+v", got)
	}
	eventually(t, "the check box to toggle", func() bool {
		s, _ := f.atspiOf(t, ref)
		return s.has(stateChecked) != before.has(stateChecked)
	})
}

// TestClickTheEntryAndTypeSetsItsText (R-DSK): click an entry, select all,
// type; the entry's text is exactly what was typed (Vietnamese included,
// on keys the keyboard lacks).
func TestClickTheEntryAndTypeSetsItsText(t *testing.T) {
	f := desktop(t)
	ans := f.observe(t)
	ref := refWhere(t, ans.Outline, `text \[ref=e\d+\] \(editable\) value="entry"`)
	for _, a := range []wire.Act{
		{Action: wire.ActClick, FrameID: ans.FrameID, Ref: ref},
		{Action: wire.ActKey, FrameID: ans.FrameID, Keys: "ctrl+a"},
		{Action: wire.ActType, FrameID: ans.FrameID, Ref: ref, Text: "hi crew, chào Việt Nam"},
	} {
		if got := f.act(t, a); got.Error != "" {
			t.Fatalf("%s: %+v", a.Action, got)
		}
	}
	eventually(t, "the entry to hold the typed text", func() bool {
		_, text := f.atspiOf(t, ref)
		return text == "hi crew, chào Việt Nam"
	})
}

// TestAStaleFrameIsRefused (R-DSK): an act naming a frame older than the
// latest is refused, and nothing is clicked.
func TestAStaleFrameIsRefused(t *testing.T) {
	f := desktop(t)
	old := f.observe(t)
	ref := refWhere(t, old.Outline, `check box "checkbutton" \[ref=e\d+\]`)
	before, _ := f.atspiOf(t, ref)
	if shot := f.call(t, wire.Request{Op: wire.OpScreenshot}); shot.Error != "" || shot.FrameID == old.FrameID {
		t.Fatalf("screenshot: %+v", shot.Error)
	}
	got := f.act(t, wire.Act{Action: wire.ActClick, FrameID: old.FrameID, Ref: ref})
	if got.Code != wire.CodeStaleFrame || !strings.Contains(got.Error, "not the latest frame") {
		t.Fatalf("got %+v, want a stale frame refusal", got)
	}
	if after, _ := f.atspiOf(t, ref); after.has(stateChecked) != before.has(stateChecked) {
		t.Fatal("the check box toggled although the act was refused")
	}
	if got := f.act(t, wire.Act{Action: wire.ActClick, FrameID: "f0000-1", Ref: ref}); got.Code != wire.CodeStaleFrame {
		t.Fatalf("an unknown frame: %+v", got)
	}
}

// TestAChangedRefIsRefused (R-DSK): the combo box showing "Left" is
// scrolled to "Middle"; its ref named "Left", so acting on it again is
// refused, saying what it was and what it is.
func TestAChangedRefIsRefused(t *testing.T) {
	f := desktop(t)
	ans := f.observe(t)
	ref := refWhere(t, ans.Outline, `combo box "Left" \[ref=e\d+\]`)
	if got := f.act(t, wire.Act{Action: wire.ActScroll, FrameID: ans.FrameID, Ref: ref, DY: 1}); got.Error != "" {
		t.Fatalf("scroll: %+v", got)
	}
	var got wire.Answer
	eventually(t, "the changed combo box to be refused", func() bool {
		got = f.act(t, wire.Act{Action: wire.ActClick, FrameID: ans.FrameID, Ref: ref})
		return got.Code == wire.CodeChanged
	})
	if !strings.Contains(got.Error, `was combo box "Left"`) {
		t.Fatalf("refusal %q does not say what the element was", got.Error)
	}
	if got := f.act(t, wire.Act{Action: wire.ActClick, FrameID: ans.FrameID, Ref: "e99999"}); got.Code != wire.CodeStaleRef {
		t.Fatalf("a ref not in the outline: %+v", got)
	}
}

// TestTypingWhenTheFocusIsNotEditableIsRefused (R-DSK): with a check box
// focused, a space typed would toggle it; the helper refuses, and the box
// stays as it was.
func TestTypingWhenTheFocusIsNotEditableIsRefused(t *testing.T) {
	f := desktop(t)
	ans := f.observe(t)
	ref := refWhere(t, ans.Outline, `check box "checkbutton" \[ref=e\d+\]`)
	if got := f.act(t, wire.Act{Action: wire.ActClick, FrameID: ans.FrameID, Ref: ref}); got.Error != "" {
		t.Fatalf("click: %+v", got)
	}
	eventually(t, "the check box to have the focus", func() bool {
		s, _ := f.atspiOf(t, ref)
		return s.has(stateFocused)
	})
	before, _ := f.atspiOf(t, ref)
	got := f.act(t, wire.Act{Action: wire.ActType, FrameID: ans.FrameID, Text: " "})
	if got.Code != wire.CodeNotEditable || !strings.Contains(got.Error, "not editable") {
		t.Fatalf("got %+v, want a not-editable refusal", got)
	}
	if after, _ := f.atspiOf(t, ref); after.has(stateChecked) != before.has(stateChecked) {
		t.Fatal("the space reached the check box")
	}
}

// TestAnAppOutsideTheAllowedListIsRefused (R-DSK): the app in front is not
// in the request's apps, so nothing is done; neither is bringing such an
// app to the front.
func TestAnAppOutsideTheAllowedListIsRefused(t *testing.T) {
	f := desktop(t)
	ans := f.observe(t)
	ref := refWhere(t, ans.Outline, `check box "checkbutton" \[ref=e\d+\]`)
	before, _ := f.atspiOf(t, ref)
	got := f.act(t, wire.Act{Action: wire.ActClick, FrameID: ans.FrameID, Ref: ref}, "xterm")
	if got.Code != wire.CodeNotAllowed || !strings.Contains(got.Error, "not one of the allowed apps") {
		t.Fatalf("got %+v, want not allowed", got)
	}
	if after, _ := f.atspiOf(t, ref); after.has(stateChecked) != before.has(stateChecked) {
		t.Fatal("the check box toggled although the app is not allowed")
	}
	if got := f.act(t, wire.Act{Action: wire.ActFront, FrameID: ans.FrameID, App: factoryApp}, "xterm"); got.Code != wire.CodeNotAllowed {
		t.Fatalf("front of an app not allowed: %+v", got)
	}
	if got := f.act(t, wire.Act{Action: wire.ActClick, FrameID: ans.FrameID, Ref: ref}, []string{}...); got.Code != wire.CodeNotAllowed {
		t.Fatalf("no apps at all: %+v", got)
	}
}

// TestAClickOffTheFrontWindowIsRefused: a point not on the window in front
// would land elsewhere.
func TestAClickOffTheFrontWindowIsRefused(t *testing.T) {
	f := desktop(t)
	ans := f.observe(t)
	r := ans.State.Frontmost.Rect
	x, y := 10, r.Y+r.H+20
	got := f.act(t, wire.Act{Action: wire.ActClick, FrameID: ans.FrameID, X: &x, Y: &y})
	if got.Code != wire.CodeNotFront {
		t.Fatalf("got %+v, want a refusal", got)
	}
}

// TestALockedScreenIsRefused: with the screen saver on, state says locked
// and an act is refused.
func TestALockedScreenIsRefused(t *testing.T) {
	f := desktop(t)
	ans := f.observe(t)
	f.h.mu.Lock()
	err := xproto.ForceScreenSaverChecked(f.h.d.x, xproto.ScreenSaverActive).Check()
	f.h.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.h.mu.Lock()
		defer f.h.mu.Unlock()
		_ = xproto.ForceScreenSaverChecked(f.h.d.x, xproto.ScreenSaverReset).Check()
	})
	if st := f.call(t, wire.Request{Op: wire.OpState}).State; st == nil || !st.Locked {
		t.Fatalf("state %+v: want locked", st)
	}
	x, y := 100, 100
	if got := f.act(t, wire.Act{Action: wire.ActClick, FrameID: ans.FrameID, X: &x, Y: &y}); got.Code != wire.CodeLocked {
		t.Fatalf("got %+v, want locked", got)
	}
}

// TestScreenshotIsAPNGWithAFrame: the screen, or the window in front
// clipped to the screen.
func TestScreenshotIsAPNGWithAFrame(t *testing.T) {
	f := desktop(t)
	for _, window := range []bool{false, true} {
		ans := f.call(t, wire.Request{Op: wire.OpScreenshot, Window: window})
		if ans.Error != "" || ans.FrameID == "" {
			t.Fatalf("screenshot: %+v", ans.Error)
		}
		img, err := png.Decode(bytes.NewReader(ans.PNG))
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("%dx%d", f.sess.Width, f.sess.Height)
		if window {
			r := clip(ans.State.Frontmost.Rect, f.sess.Width, f.sess.Height)
			want = fmt.Sprintf("%dx%d", r.W, r.H)
		}
		if got := fmt.Sprintf("%dx%d", img.Bounds().Dx(), img.Bounds().Dy()); got != want {
			t.Errorf("window=%v: %s, want %s", window, got, want)
		}
	}
}
