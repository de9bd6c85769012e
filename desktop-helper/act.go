package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/jezek/xgb/xproto"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
)

// act re-checks everything right before it acts (R-DSK): the frame is the
// latest and shows the window that is still in front, the screen is not
// locked, the app is allowed, a ref is of the latest outline and its
// element did not change, nothing goes to a secure field, and text goes
// only to an editable element that has the focus.
func (h *helper) act(req wire.Request) wire.Answer {
	a := req.Act
	if a == nil {
		return refuse(wire.CodeBadRequest, "act: no action")
	}
	if h.frame == "" {
		return refuse(wire.CodeStaleFrame, "no frame yet: take a screenshot or observe first")
	}
	if a.FrameID != h.frame {
		return refuse(wire.CodeStaleFrame, "frame %q is not the latest frame (%s): take a new screenshot or observe and act on what it shows", a.FrameID, h.frame)
	}
	if h.locked() {
		return refuse(wire.CodeLocked, "the screen is locked")
	}
	apps := h.allowed()
	if len(apps) == 0 {
		return refuse(wire.CodeNotAllowed, "no app is allowed (computer_apps is empty)")
	}
	if a.Action == wire.ActFront {
		return h.front(a.App, apps)
	}
	top, client := h.d.frontWindow()
	front := h.d.app(top, client)
	if front == nil {
		return refuse(wire.CodeNotFront, "no application window is in front")
	}
	if !front.Matches(apps) {
		return refuse(wire.CodeNotAllowed, "the app in front is %s (%s), which is not one of the allowed apps (%s)",
			front.Name(), front.Exe, strings.Join(apps, ", "))
	}
	if top != h.frameWin {
		return refuse(wire.CodeStaleFrame, "the window in front changed since frame %s: take a new screenshot or observe", a.FrameID)
	}
	var el *info
	if a.Ref != "" {
		in, ans, ok := h.element(a.Ref, top)
		if !ok {
			return ans
		}
		el = &in
	}
	switch a.Action {
	case wire.ActClick, wire.ActScroll:
		return h.pointer(a, el, top, front)
	case wire.ActType:
		if a.Text == "" {
			return refuse(wire.CodeBadRequest, "type: text is empty")
		}
		if n := len([]rune(a.Text)); n > maxTyped {
			return refuse(wire.CodeBadRequest, "type: %d characters; at most %d at a time", n, maxTyped)
		}
		target, ans, ok := h.typingTarget(a.Ref, el, top, client, front)
		if !ok {
			return ans
		}
		if err := h.d.typeText(a.Text); err != nil {
			return refuse(wire.CodeFailed, "type: %v", err)
		}
		return wire.Answer{Done: fmt.Sprintf("typed %d characters into %s", len([]rune(a.Text)), describe(target))}
	case wire.ActKey:
		syms, err := parseKeys(a.Keys)
		if err != nil {
			return refuse(wire.CodeBadRequest, "%v", err)
		}
		if ans, ok := h.keyboardGoesTo(top, client, front, false); !ok {
			return ans
		}
		if err := h.d.press(syms); err != nil {
			return refuse(wire.CodeFailed, "key: %v", err)
		}
		return wire.Answer{Done: fmt.Sprintf("pressed %s in %s", a.Keys, front.Name())}
	}
	return refuse(wire.CodeBadRequest, "unknown action %q: want click, type, key, scroll or front", a.Action)
}

// element re-reads a ref of the latest outline and checks it is what the
// outline showed.
func (h *helper) element(ref string, top xproto.Window) (info, wire.Answer, bool) {
	t, ok := target{}, false
	if h.out != nil {
		t, ok = h.out.refs[ref]
	}
	if !ok {
		return info{}, refuse(wire.CodeStaleRef, "ref %q is not in the latest outline: observe again and use a ref it shows", ref), false
	}
	if h.outWin != top {
		return info{}, refuse(wire.CodeStaleRef, "ref %q is of an outline of another window: observe again", ref), false
	}
	a := h.bus()
	if a == nil {
		return info{}, refuse(wire.CodeFailed, "the accessibility bus does not answer"), false
	}
	in, err := a.info(t.node)
	if err != nil {
		return info{}, refuse(wire.CodeChanged, "ref %s (%s %q) is gone: observe again", ref, t.role, t.name), false
	}
	if in.role != t.role || in.name != t.name {
		return info{}, refuse(wire.CodeChanged, "ref %s changed: it was %s %q and is now %s %q; observe again", ref, t.role, t.name, in.role, in.name), false
	}
	if !in.states.has(stateShowing) {
		return info{}, refuse(wire.CodeChanged, "ref %s (%s %q) is no longer showing: observe again", ref, t.role, t.name), false
	}
	if in.secure() {
		return info{}, refuse(wire.CodeSecure, "ref %s is a secure (password) field: the helper does not act on it", ref), false
	}
	return in, wire.Answer{}, true
}

func describe(in info) string {
	if in.name == "" {
		return in.role
	}
	return fmt.Sprintf("%s %q", in.role, in.name)
}

// pointer clicks or scrolls at a ref's centre or at coordinates, which
// must lie in the window in front, uncovered.
func (h *helper) pointer(a *wire.Act, el *info, top xproto.Window, front *wire.App) wire.Answer {
	var x, y int
	what := ""
	switch {
	case el != nil:
		if !el.states.has(stateSensitive) {
			return refuse(wire.CodeChanged, "ref %s (%s) is disabled", a.Ref, describe(*el))
		}
		ex, ey, ew, eh, err := h.a.extents(el.node)
		if err != nil || ew <= 0 || eh <= 0 {
			return refuse(wire.CodeChanged, "ref %s (%s) has no place on the screen", a.Ref, describe(*el))
		}
		x, y, what = ex+ew/2, ey+eh/2, describe(*el)+" ("+a.Ref+")"
	case a.X != nil && a.Y != nil:
		x, y = *a.X, *a.Y
		what = front.Name()
	case a.Action == wire.ActScroll:
		p, err := xproto.QueryPointer(h.d.x, h.d.root).Reply()
		if err != nil {
			return refuse(wire.CodeFailed, "read the pointer: %v", err)
		}
		x, y, what = int(p.RootX), int(p.RootY), front.Name()
	default:
		return refuse(wire.CodeBadRequest, "%s: give a ref or both x and y", a.Action)
	}
	if x < 0 || y < 0 || x >= h.d.w || y >= h.d.h {
		return refuse(wire.CodeBadRequest, "(%d,%d) is off the %dx%d screen", x, y, h.d.w, h.d.h)
	}
	if w := h.windowAt(x, y); w != top {
		return refuse(wire.CodeNotFront, "(%d,%d) is not on %s's window in front: it would land elsewhere", x, y, front.Name())
	}
	switch a.Action {
	case wire.ActClick:
		button, ok := map[string]byte{"": 1, "left": 1, "middle": 2, "right": 3}[a.Button]
		if !ok {
			return refuse(wire.CodeBadRequest, "click: button %q: want left, middle or right", a.Button)
		}
		count := a.Count
		if count == 0 {
			count = 1
		}
		if count < 1 || count > 3 {
			return refuse(wire.CodeBadRequest, "click: count %d: want 1, 2 or 3", a.Count)
		}
		if err := h.d.click(x, y, button, count); err != nil {
			return refuse(wire.CodeFailed, "click: %v", err)
		}
		return wire.Answer{Done: fmt.Sprintf("clicked %s at (%d,%d)", what, x, y)}
	default:
		if a.DX == 0 && a.DY == 0 {
			return refuse(wire.CodeBadRequest, "scroll: dx and dy are both 0")
		}
		if abs(a.DX) > 50 || abs(a.DY) > 50 {
			return refuse(wire.CodeBadRequest, "scroll: at most 50 steps each way")
		}
		if err := h.d.move(x, y); err != nil {
			return refuse(wire.CodeFailed, "scroll: %v", err)
		}
		for _, s := range []struct {
			n        int
			neg, pos byte
		}{{a.DY, 4, 5}, {a.DX, 6, 7}} {
			b := s.pos
			if s.n < 0 {
				b = s.neg
			}
			if s.n != 0 {
				if err := h.d.click(x, y, b, abs(s.n)); err != nil {
					return refuse(wire.CodeFailed, "scroll: %v", err)
				}
			}
		}
		return wire.Answer{Done: fmt.Sprintf("scrolled %s by (%d,%d) at (%d,%d)", what, a.DX, a.DY, x, y)}
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// windowAt is the top-level window at a screen point.
func (h *helper) windowAt(x, y int) xproto.Window {
	r, err := xproto.TranslateCoordinates(h.d.x, h.d.root, h.d.root, int16(x), int16(y)).Reply()
	if err != nil {
		return 0
	}
	return r.Child
}

// keyboardGoesTo checks that keystrokes would reach the window in front
// and, for text, that no program holds the keyboard (a passphrase prompt
// grabs it; so does an open menu, where keys, not text, are what is
// wanted).
func (h *helper) keyboardGoesTo(top, client xproto.Window, front *wire.App, text bool) (wire.Answer, bool) {
	if text && h.d.keyboardHeld() {
		return refuse(wire.CodeSecure, "another program holds the keyboard (secure input: a lock screen or a passphrase prompt)"), false
	}
	if f := h.d.focusTop(); f != top {
		return refuse(wire.CodeNotFront, "the keyboard goes to another window than %s's in front", front.Name()), false
	}
	if h.bus() != nil {
		if f, ok := h.focused(client); ok && f.secure() {
			return refuse(wire.CodeSecure, "the focus is on a secure (password) field: the helper does not type there"), false
		}
	}
	return wire.Answer{}, true
}

// typingTarget is the element the text would go to: the focused element
// of the app in front, which must be el when a ref is given, and must be
// sensitive, editable and not secure.
func (h *helper) typingTarget(ref string, el *info, top, client xproto.Window, front *wire.App) (info, wire.Answer, bool) {
	if ans, ok := h.keyboardGoesTo(top, client, front, true); !ok {
		return info{}, ans, false
	}
	if h.bus() == nil {
		return info{}, refuse(wire.CodeNotEditable, "the accessibility bus does not answer, so where the text would go cannot be checked"), false
	}
	var f info
	ok := false
	for range 10 { // a click just before may take a moment to move the focus
		if f, ok = h.focused(client); ok && (el == nil || f.node == el.node) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !ok {
		return info{}, refuse(wire.CodeNotEditable, "no element of %s has the keyboard focus (or it has no accessibility bridge): click the field first", front.Name()), false
	}
	if el != nil && f.node != el.node {
		return info{}, refuse(wire.CodeNotEditable, "the focus is on %s, not on ref %s (%s): click the field first", describe(f), ref, describe(*el)), false
	}
	switch {
	case f.secure():
		return info{}, refuse(wire.CodeSecure, "the focus is on a secure (password) field: the helper does not type there"), false
	case !f.states.has(stateSensitive):
		return info{}, refuse(wire.CodeNotEditable, "the focused %s is disabled: the text would go nowhere", describe(f)), false
	case !f.editable():
		return info{}, refuse(wire.CodeNotEditable, "the focus is on %s, which is not editable: the text would go there anyway; click an editable field first", describe(f)), false
	}
	return f, wire.Answer{}, true
}

// front brings app to the front.
func (h *helper) front(app string, allowed []string) wire.Answer {
	if app == "" {
		return refuse(wire.CodeBadRequest, "front: name the app")
	}
	if !(&wire.App{Class: app}).Matches(allowed) {
		return refuse(wire.CodeNotAllowed, "%s is not one of the allowed apps (%s)", app, strings.Join(allowed, ", "))
	}
	for _, w := range h.d.apps() {
		if !w.app.Matches([]string{app}) {
			continue
		}
		if !w.app.Matches(allowed) {
			continue
		}
		if err := h.d.raise(w.top, w.client); err != nil {
			return refuse(wire.CodeFailed, "bring %s to the front: %v", app, err)
		}
		for range 20 {
			if top, _ := h.d.frontWindow(); top == w.top {
				return wire.Answer{Done: fmt.Sprintf("%s is in front (window %q)", w.app.Name(), w.app.Title)}
			}
			time.Sleep(50 * time.Millisecond)
		}
		return refuse(wire.CodeFailed, "asked to bring %s to the front, but it is not in front", app)
	}
	return refuse(wire.CodeFailed, "no window of %s is showing", app)
}
