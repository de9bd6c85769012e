package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/jezek/xgb/xproto"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
)

// helper answers requests, one at a time: what it saw last (the latest
// frame and outline) is what the next act is checked against.
type helper struct {
	mu sync.Mutex
	// allowed are the apps the helper shows and acts on: computer_apps of
	// the home's agents with computer: "on", or its --apps flag; never a
	// client's word.
	allowed func() []string

	d       *display
	a       *atspi // nil until the accessibility bus answers
	session string // random per start, so frames of an earlier run are stale
	seq     int

	frame    string        // the latest frame id
	frameWin xproto.Window // the frontmost window when it was made

	out    *outline // the latest outline
	outWin xproto.Window
}

func newHelper(d *display, allowed func() []string) *helper {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &helper{d: d, allowed: allowed, session: hex.EncodeToString(b[:])}
}

func (h *helper) Close() {
	if h.a != nil {
		h.a.Close()
	}
	h.d.Close()
}

// handle answers one request.
func (h *helper) handle(req wire.Request) wire.Answer {
	h.mu.Lock()
	defer h.mu.Unlock()
	if req.Apps != nil {
		return refuse(wire.CodeBadRequest, "a request may not name the allowed apps: the helper reads computer_apps from the home (or its --apps flag)")
	}
	switch req.Op {
	case wire.OpState:
		return wire.Answer{State: h.state()}
	case wire.OpScreenshot:
		return h.screenshot(req.Window)
	case wire.OpObserve:
		return h.observe()
	case wire.OpAct:
		return h.act(req)
	}
	return refuse(wire.CodeBadRequest, "unknown op %q: want state, screenshot, observe or act", req.Op)
}

func refuse(code, format string, args ...any) wire.Answer {
	return wire.Answer{Code: code, Error: fmt.Sprintf(format, args...)}
}

// bus returns the accessibility bus, connecting when it is not yet.
func (h *helper) bus() *atspi {
	if h.a != nil && h.a.ping() {
		return h.a
	}
	if h.a != nil {
		h.a.Close()
		h.a = nil
	}
	if a, err := connectATSPI(); err == nil && a.ping() {
		h.a = a
	}
	return h.a
}

func (h *helper) state() *wire.State {
	top, client := h.d.frontWindow()
	st := &wire.State{Version: wire.Version, Helper: "crew-desktop " + version, Display: h.d.name, Width: h.d.w, Height: h.d.h,
		Frontmost: h.d.app(top, client), Locked: h.locked()}
	a := h.bus()
	st.AtSPI = a != nil
	st.SecureInput = h.d.keyboardHeld()
	if !st.SecureInput && a != nil && client != 0 {
		if f, ok := h.focused(client); ok && f.secure() {
			st.SecureInput = true
		}
	}
	return st
}

// locked: the X screen saver is on, or the session's screen saver says it
// is active (desktop lockers answer org.freedesktop.ScreenSaver).
func (h *helper) locked() bool {
	if h.d.locked() {
		return true
	}
	sess, err := dbus.ConnectSessionBus()
	if err != nil {
		return false
	}
	defer sess.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var has bool
	if sess.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, "org.freedesktop.ScreenSaver").Store(&has) != nil || !has {
		return false
	}
	var active bool
	err = sess.Object("org.freedesktop.ScreenSaver", "/org/freedesktop/ScreenSaver").
		CallWithContext(ctx, "org.freedesktop.ScreenSaver.GetActive", 0).Store(&active)
	return err == nil && active
}

// newFrame names what the client is about to see.
func (h *helper) newFrame(top xproto.Window) string {
	h.seq++
	h.frame = fmt.Sprintf("f%s-%d", h.session, h.seq)
	h.frameWin = top
	return h.frame
}

func (h *helper) screenshot(window bool) wire.Answer {
	top, client := h.d.frontWindow()
	allowed := h.allowed()
	r := wire.Rect{W: h.d.w, H: h.d.h}
	if window {
		if top == 0 {
			return refuse(wire.CodeFailed, "no application window is showing; take a screenshot of the screen")
		}
		if app := h.d.app(top, client); !app.Matches(allowed) {
			return refuse(wire.CodeNotAllowed, "the app in front is %s, which is not one of the allowed apps (%s): nothing of it is shown", app.Name(), strings.Join(allowed, ", "))
		}
		r = clip(h.d.rect(top), h.d.w, h.d.h)
	}
	data, err := h.d.screenshot(r)
	if err == nil {
		data, err = h.onlyAllowed(data, r, allowed)
	}
	if err != nil {
		return refuse(wire.CodeFailed, "%v", err)
	}
	st := h.state()
	return wire.Answer{FrameID: h.newFrame(top), PNG: data, Origin: &wire.Point{X: r.X, Y: r.Y}, State: st,
		Done: fmt.Sprintf("screenshot %dx%d at (%d,%d)", r.W, r.H, r.X, r.Y)}
}

func (h *helper) observe() wire.Answer {
	top, client := h.d.frontWindow()
	if top == 0 {
		return refuse(wire.CodeFailed, "no application window is showing")
	}
	app := h.d.app(top, client)
	h.out, h.outWin = nil, 0
	if allowed := h.allowed(); !app.Matches(allowed) {
		return refuse(wire.CodeNotAllowed, "the app in front is %s, which is not one of the allowed apps (%s): nothing of it is shown", app.Name(), strings.Join(allowed, ", "))
	}
	st := h.state()
	a := h.bus()
	if a == nil {
		return wire.Answer{FrameID: h.newFrame(top), State: st, NoBridge: true,
			Outline: "The accessibility bus does not answer, so there is no outline: screenshot only, no refs. Use a screenshot and click by coordinates."}
	}
	node, found, err := a.appOf(h.d.pid(client))
	if err != nil || !found {
		return wire.Answer{FrameID: h.newFrame(top), State: st, NoBridge: true,
			Outline: fmt.Sprintf("%s has no accessibility bridge, so there is no outline: screenshot only, no refs. Use a screenshot and click by coordinates.", app.Name())}
	}
	o, err := a.walk(node, app.Name(), app.Title)
	if err != nil {
		return refuse(wire.CodeFailed, "read the outline of %s: %v", app.Name(), err)
	}
	frame := h.newFrame(top)
	h.out, h.outWin = &o, top
	return wire.Answer{FrameID: frame, State: st, Outline: o.text, Refs: o.list}
}

// focused finds the focused element of the app behind client.
func (h *helper) focused(client xproto.Window) (info, bool) {
	a := h.a
	if a == nil {
		return info{}, false
	}
	app, found, err := a.appOf(h.d.pid(client))
	if err != nil || !found {
		return info{}, false
	}
	n, ok := a.findFocused(app, 0, new(int))
	if !ok {
		return info{}, false
	}
	in, err := a.info(n)
	return in, err == nil
}

// findFocused walks the showing part of the tree for the focused element.
func (a *atspi) findFocused(n node, depth int, count *int) (node, bool) {
	if *count >= maxNodes || depth > maxDepth {
		return node{}, false
	}
	*count++
	s, err := a.states(n)
	if err != nil {
		return node{}, false
	}
	if depth > 1 && !s.has(stateShowing) {
		return node{}, false
	}
	if s.has(stateFocused) {
		return n, true
	}
	kids, err := a.children(n)
	if err != nil {
		return node{}, false
	}
	for _, k := range kids {
		if f, ok := a.findFocused(k, depth+1, count); ok {
			return f, true
		}
	}
	return node{}, false
}
