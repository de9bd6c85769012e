package main

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/desktop-helper/desktoptest"
	"github.com/my-agent-crew/crew/desktop-helper/wire"
)

// TestAClientNamingItsOwnAppsIsRefused (R-DSK): the helper takes its
// allowed apps from the home, never from a request: one that names apps,
// even the allowed ones, is refused and nothing is done.
func TestAClientNamingItsOwnAppsIsRefused(t *testing.T) {
	f := desktop(t)
	ans := f.observe(t)
	ref := refWhere(t, ans.Outline, `check box "checkbutton" \[ref=e\d+\]`)
	before, _ := f.atspiOf(t, ref)
	for _, req := range []wire.Request{
		{Op: wire.OpAct, Apps: []string{factoryApp, "xterm"}, Act: &wire.Act{Action: wire.ActClick, FrameID: ans.FrameID, Ref: ref}},
		{Op: wire.OpObserve, Apps: []string{"xterm"}},
		{Op: wire.OpScreenshot, Apps: []string{"xterm"}},
		{Op: wire.OpState, Apps: []string{factoryApp}},
	} {
		if got := f.call(t, req); got.Code != wire.CodeBadRequest || !strings.Contains(got.Error, "reads computer_apps from the home") || got.PNG != nil || got.Outline != "" {
			t.Errorf("%s with apps %v: %+v, want refused", req.Op, req.Apps, got)
		}
	}
	if after, _ := f.atspiOf(t, ref); after.has(stateChecked) != before.has(stateChecked) {
		t.Fatal("the check box toggled for a client that named its own apps")
	}
}

// TestAnAppOutsideComputerAppsIsAbsentAndBlackedOut (R-DSK): with an app
// outside computer_apps on the screen, the screenshot is black where its
// window is (and the allowed app still shows), and while it is in front
// observe and a window screenshot show nothing of it.
func TestAnAppOutsideComputerAppsIsAbsentAndBlackedOut(t *testing.T) {
	f := desktop(t)
	cmd, err := f.sess.StartApp(nil, "xmessage", "-geometry", "300x120+40+40", "-bg", "red", "-fg", "yellow", "OUTSIDE COMPUTER_APPS")
	if err != nil {
		if desktoptest.Required() {
			t.Fatalf("xmessage (x11-utils, .ci/run installs it): %v", err)
		}
		t.Skipf("xmessage: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		eventually(t, "the factory back in front", func() bool {
			f.h.mu.Lock()
			defer f.h.mu.Unlock()
			top, client := f.h.d.frontWindow()
			return f.h.d.app(top, client).Matches([]string{factoryApp})
		})
	})
	var box wire.Rect
	eventually(t, "xmessage's window", func() bool {
		f.h.mu.Lock()
		defer f.h.mu.Unlock()
		for _, w := range f.h.d.apps() {
			if w.app.Matches([]string{"xmessage"}) {
				box = f.h.d.rect(w.top)
				return box.W > 0
			}
		}
		return false
	})
	shot := f.call(t, wire.Request{Op: wire.OpScreenshot})
	if shot.Error != "" {
		t.Fatalf("screenshot: %s", shot.Error)
	}
	img, err := png.Decode(bytes.NewReader(shot.PNG))
	if err != nil {
		t.Fatal(err)
	}
	if n := nonBlack(img, image.Rect(box.X, box.Y, box.X+box.W, box.Y+box.H)); n != 0 {
		t.Errorf("%d pixels of xmessage's window (%+v) show in the screenshot", n, box)
	}
	if nonBlack(img, img.Bounds()) == 0 {
		t.Error("the screenshot is all black: the allowed factory does not show")
	}
	// The unallowed app in front: nothing of it.
	f.h.mu.Lock()
	top, client := f.h.d.frontWindow()
	inFront := f.h.d.app(top, client).Matches([]string{"xmessage"})
	f.h.mu.Unlock()
	if !inFront {
		t.Skip("xmessage did not come to the front here; the blackout above held")
	}
	if got := f.call(t, wire.Request{Op: wire.OpObserve}); got.Code != wire.CodeNotAllowed || got.Outline != "" || got.FrameID != "" {
		t.Errorf("observe with xmessage in front: %+v", got)
	}
	if got := f.call(t, wire.Request{Op: wire.OpScreenshot, Window: true}); got.Code != wire.CodeNotAllowed || got.PNG != nil {
		t.Errorf("a window screenshot of xmessage: code %q, %d bytes", got.Code, len(got.PNG))
	}
}

// nonBlack counts the pixels of img in r that are not black.
func nonBlack(img image.Image, r image.Rectangle) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if cr, cg, cb, _ := img.At(x, y).RGBA(); cr|cg|cb != 0 {
				n++
			}
		}
	}
	return n
}

// TestAllowedAppsComeFromTheHomeOrTheFlag: the union of computer_apps of
// the home's agents with computer: "on", read again each time; --apps
// instead when given.
func TestAllowedAppsComeFromTheHomeOrTheFlag(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, "agents", "coder"), 0o700)
	os.MkdirAll(filepath.Join(home, "agents", "off"), 0o700)
	os.WriteFile(filepath.Join(home, "agent.yaml"), []byte("name: Master\ncomputer: \"on\"\ncomputer_apps: [gtk3-widget-factory]\n"), 0o600)
	os.WriteFile(filepath.Join(home, "agents", "coder", "agent.yaml"), []byte("computer: \"on\"\ncomputer_apps: [xterm, gtk3-widget-factory]\n"), 0o600)
	os.WriteFile(filepath.Join(home, "agents", "off", "agent.yaml"), []byte("computer_apps: [firefox]\n"), 0o600)
	got := allowedApps(home, "")
	if a := got(); !slices.Equal(a, []string{"gtk3-widget-factory", "xterm"}) {
		t.Errorf("from the home: %v", a)
	}
	os.WriteFile(filepath.Join(home, "agents", "coder", "agent.yaml"), []byte("computer: \"on\"\n"), 0o600)
	if a := got(); !slices.Equal(a, []string{"gtk3-widget-factory"}) {
		t.Errorf("after the coder's change: %v", a)
	}
	if a := allowedApps(home, " xterm, gedit ,")(); !slices.Equal(a, []string{"xterm", "gedit"}) {
		t.Errorf("from the flag: %v", a)
	}
}
