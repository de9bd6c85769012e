package main

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/screensaver"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
)

// display is the one X11 connection: screenshots, the window stack and
// XTEST input. Its methods are called one request at a time (server.mu).
type display struct {
	x      *xgb.Conn
	name   string
	root   xproto.Window
	w, h   int
	saver  bool // MIT-SCREEN-SAVER is there
	atoms  map[string]xproto.Atom
	keymap map[xproto.Keysym]keyPos
	minKC  xproto.Keycode
	maxKC  xproto.Keycode
	perKC  int
}

// keyPos is where a keysym sits on the keyboard: its keycode, and whether
// shift reaches it.
type keyPos struct {
	code  xproto.Keycode
	shift bool
}

func openDisplay() (*display, error) {
	name := os.Getenv("DISPLAY")
	if name == "" {
		return nil, errors.New("DISPLAY is not set: run the helper inside the graphical session")
	}
	x, err := xgb.NewConnDisplay(name)
	if err != nil {
		return nil, fmt.Errorf("connect to X display %s: %w", name, err)
	}
	if err := xtest.Init(x); err != nil {
		x.Close()
		return nil, fmt.Errorf("X display %s has no XTEST extension: %w", name, err)
	}
	s := xproto.Setup(x).DefaultScreen(x)
	d := &display{x: x, name: name, root: s.Root, w: int(s.WidthInPixels), h: int(s.HeightInPixels),
		atoms: map[string]xproto.Atom{}, minKC: xproto.Setup(x).MinKeycode, maxKC: xproto.Setup(x).MaxKeycode}
	d.saver = screensaver.Init(x) == nil
	if err := d.loadKeymap(); err != nil {
		x.Close()
		return nil, err
	}
	return d, nil
}

func (d *display) Close() { d.x.Close() }

func (d *display) atom(name string) xproto.Atom {
	if a, ok := d.atoms[name]; ok {
		return a
	}
	r, err := xproto.InternAtom(d.x, true, uint16(len(name)), name).Reply()
	if err != nil || r == nil {
		return 0
	}
	d.atoms[name] = r.Atom
	return r.Atom
}

// prop reads a window property's raw value; nil when absent.
func (d *display) prop(w xproto.Window, name string) *xproto.GetPropertyReply {
	a := d.atom(name)
	if a == 0 {
		return nil
	}
	r, err := xproto.GetProperty(d.x, false, w, a, xproto.GetPropertyTypeAny, 0, 1<<16).Reply()
	if err != nil || r == nil || r.ValueLen == 0 {
		return nil
	}
	return r
}

func (d *display) propWindow(w xproto.Window, name string) xproto.Window {
	r := d.prop(w, name)
	if r == nil || r.Format != 32 || len(r.Value) < 4 {
		return 0
	}
	return xproto.Window(xgb.Get32(r.Value))
}

// windowClass is WM_CLASS's class (the second string), or "".
func (d *display) windowClass(w xproto.Window) (string, bool) {
	r := d.prop(w, "WM_CLASS")
	if r == nil {
		return "", false
	}
	parts := strings.Split(strings.TrimRight(string(r.Value), "\x00"), "\x00")
	return parts[len(parts)-1], true
}

func (d *display) title(w xproto.Window) string {
	for _, n := range []string{"_NET_WM_NAME", "WM_NAME"} {
		if r := d.prop(w, n); r != nil && utf8.Valid(r.Value) {
			return string(r.Value)
		}
	}
	return ""
}

// exe is the base name of the program behind w (_NET_WM_PID, then the
// process's exe link), or "".
func (d *display) exe(w xproto.Window) (string, uint32) {
	r := d.prop(w, "_NET_WM_PID")
	if r == nil || r.Format != 32 || len(r.Value) < 4 {
		return "", 0
	}
	pid := xgb.Get32(r.Value)
	target, err := os.Readlink("/proc/" + strconv.Itoa(int(pid)) + "/exe")
	if err != nil {
		return "", pid
	}
	return filepath.Base(strings.TrimSuffix(target, " (deleted)")), pid
}

// client finds the window carrying WM_CLASS at or below w (a window
// manager's frame holds the client window inside).
func (d *display) client(w xproto.Window, depth int) xproto.Window {
	if _, ok := d.windowClass(w); ok {
		return w
	}
	if depth == 0 {
		return 0
	}
	t, err := xproto.QueryTree(d.x, w).Reply()
	if err != nil {
		return 0
	}
	for i := len(t.Children) - 1; i >= 0; i-- {
		if c := d.client(t.Children[i], depth-1); c != 0 {
			return c
		}
	}
	return 0
}

// topLevel is the root's child that holds w.
func (d *display) topLevel(w xproto.Window) xproto.Window {
	for i := 0; i < 32 && w != 0; i++ {
		t, err := xproto.QueryTree(d.x, w).Reply()
		if err != nil {
			return 0
		}
		if t.Parent == d.root || t.Parent == 0 {
			return w
		}
		w = t.Parent
	}
	return 0
}

// frontWindow is the frontmost application window: the window manager's
// _NET_ACTIVE_WINDOW when there is one, else the topmost mapped root child
// that holds an application window (the stacking order, bottom to top).
// It returns the top-level window and the client inside it.
func (d *display) frontWindow() (top, client xproto.Window) {
	if a := d.propWindow(d.root, "_NET_ACTIVE_WINDOW"); a != 0 {
		if c := d.client(a, 3); c != 0 {
			return d.topLevel(a), c
		}
	}
	t, err := xproto.QueryTree(d.x, d.root).Reply()
	if err != nil {
		return 0, 0
	}
	for i := len(t.Children) - 1; i >= 0; i-- {
		w := t.Children[i]
		at, err := xproto.GetWindowAttributes(d.x, w).Reply()
		if err != nil || at.MapState != xproto.MapStateViewable || at.Class != xproto.WindowClassInputOutput || at.OverrideRedirect {
			continue
		}
		if c := d.client(w, 3); c != 0 {
			return w, c
		}
	}
	return 0, 0
}

// rect is w's rectangle on the screen.
func (d *display) rect(w xproto.Window) wire.Rect {
	g, err := xproto.GetGeometry(d.x, xproto.Drawable(w)).Reply()
	if err != nil {
		return wire.Rect{}
	}
	tr, err := xproto.TranslateCoordinates(d.x, w, d.root, 0, 0).Reply()
	if err != nil {
		return wire.Rect{}
	}
	return wire.Rect{X: int(tr.DstX), Y: int(tr.DstY), W: int(g.Width), H: int(g.Height)}
}

// app describes the program of a top-level window and its client.
func (d *display) app(top, client xproto.Window) *wire.App {
	if client == 0 {
		return nil
	}
	class, _ := d.windowClass(client)
	exe, _ := d.exe(client)
	return &wire.App{Class: class, Exe: exe, Title: d.title(client), Window: uint32(top), Rect: d.rect(top)}
}

// pid is the process id behind a client window, 0 when unknown.
func (d *display) pid(client xproto.Window) uint32 {
	_, pid := d.exe(client)
	return pid
}

// window is a top-level window, the client window inside it and its app.
type window struct {
	top, client xproto.Window
	app         *wire.App
}

// apps lists every mapped application window, top first.
func (d *display) apps() []window {
	var out []window
	t, err := xproto.QueryTree(d.x, d.root).Reply()
	if err != nil {
		return nil
	}
	for i := len(t.Children) - 1; i >= 0; i-- {
		w := t.Children[i]
		at, err := xproto.GetWindowAttributes(d.x, w).Reply()
		if err != nil || at.MapState != xproto.MapStateViewable || at.OverrideRedirect {
			continue
		}
		if c := d.client(w, 3); c != 0 {
			out = append(out, window{w, c, d.app(w, c)})
		}
	}
	return out
}

// raise brings a top-level window to the front and gives it the keyboard:
// through the window manager when there is one (_NET_ACTIVE_WINDOW), else
// by restacking it directly.
func (d *display) raise(top, client xproto.Window) error {
	if d.propWindow(d.root, "_NET_SUPPORTING_WM_CHECK") != 0 {
		ev := xproto.ClientMessageEvent{Format: 32, Window: client, Type: d.atom("_NET_ACTIVE_WINDOW"),
			Data: xproto.ClientMessageDataUnionData32New([]uint32{2, 0, 0, 0, 0})}
		return xproto.SendEventChecked(d.x, false, d.root,
			xproto.EventMaskSubstructureRedirect|xproto.EventMaskSubstructureNotify, string(ev.Bytes())).Check()
	}
	if err := xproto.ConfigureWindowChecked(d.x, top, xproto.ConfigWindowStackMode, []uint32{xproto.StackModeAbove}).Check(); err != nil {
		return err
	}
	return nil
}

// locked reports whether the screen saver (or a locker through it) covers
// the screen.
func (d *display) locked() bool {
	if !d.saver {
		return false
	}
	r, err := screensaver.QueryInfo(d.x, xproto.Drawable(d.root)).Reply()
	return err == nil && r.State == screensaver.StateOn
}

// keyboardHeld reports whether another program holds the keyboard (a lock
// screen or a passphrase prompt grabs it): our own grab fails then.
func (d *display) keyboardHeld() bool {
	r, err := xproto.GrabKeyboard(d.x, false, d.root, xproto.TimeCurrentTime,
		xproto.GrabModeAsync, xproto.GrabModeAsync).Reply()
	if err != nil {
		return false
	}
	if r.Status == xproto.GrabStatusSuccess {
		xproto.UngrabKeyboard(d.x, xproto.TimeCurrentTime)
		return false
	}
	return r.Status == xproto.GrabStatusAlreadyGrabbed || r.Status == xproto.GrabStatusFrozen
}

// focusTop is the top-level window that keystrokes go to now: the input
// focus, or the window under the pointer when focus follows the pointer.
func (d *display) focusTop() xproto.Window {
	f, err := xproto.GetInputFocus(d.x).Reply()
	if err != nil {
		return 0
	}
	w := f.Focus
	if w == xproto.InputFocusPointerRoot || w == d.root {
		p, err := xproto.QueryPointer(d.x, d.root).Reply()
		if err != nil {
			return 0
		}
		w = p.Child
	}
	if w == 0 {
		return 0
	}
	return d.topLevel(w)
}

// screenshot returns r of the screen as PNG.
func (d *display) screenshot(r wire.Rect) ([]byte, error) {
	r = clip(r, d.w, d.h)
	if r.W <= 0 || r.H <= 0 {
		return nil, errors.New("the window is off the screen")
	}
	img, err := xproto.GetImage(d.x, xproto.ImageFormatZPixmap, xproto.Drawable(d.root),
		int16(r.X), int16(r.Y), uint16(r.W), uint16(r.H), 0xffffffff).Reply()
	if err != nil {
		return nil, fmt.Errorf("read the screen: %w", err)
	}
	if len(img.Data) < r.W*r.H*4 {
		return nil, fmt.Errorf("read the screen: %d bytes for %dx%d (depth %d)", len(img.Data), r.W, r.H, img.Depth)
	}
	out := image.NewNRGBA(image.Rect(0, 0, r.W, r.H))
	for i := 0; i < r.W*r.H; i++ { // BGRX → RGBA
		s, p := img.Data[i*4:i*4+4], out.Pix[i*4:i*4+4]
		p[0], p[1], p[2], p[3] = s[2], s[1], s[0], 0xff
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func clip(r wire.Rect, w, h int) wire.Rect {
	x0, y0 := max(r.X, 0), max(r.Y, 0)
	x1, y1 := min(r.X+r.W, w), min(r.Y+r.H, h)
	return wire.Rect{X: x0, Y: y0, W: x1 - x0, H: y1 - y0}
}

// Input through XTEST.

func (d *display) fake(typ byte, detail byte, x, y int) error {
	return xtest.FakeInputChecked(d.x, typ, detail, 0, d.root, int16(x), int16(y), 0).Check()
}

func (d *display) move(x, y int) error { return d.fake(xproto.MotionNotify, 0, x, y) }

// click presses and releases button (1 left, 2 middle, 3 right; 4–7 are
// the scroll wheel) count times at x, y.
func (d *display) click(x, y int, button byte, count int) error {
	if err := d.move(x, y); err != nil {
		return err
	}
	for range count {
		if err := d.fake(xproto.ButtonPress, button, 0, 0); err != nil {
			return err
		}
		if err := d.fake(xproto.ButtonRelease, button, 0, 0); err != nil {
			return err
		}
	}
	d.sync()
	return nil
}

// sync waits until the server has handled everything sent so far.
func (d *display) sync() { _, _ = xproto.GetInputFocus(d.x).Reply() }

func (d *display) loadKeymap() error {
	n := int(d.maxKC) - int(d.minKC) + 1
	m, err := xproto.GetKeyboardMapping(d.x, d.minKC, byte(n)).Reply()
	if err != nil {
		return fmt.Errorf("read the keyboard map: %w", err)
	}
	d.perKC = int(m.KeysymsPerKeycode)
	d.keymap = map[xproto.Keysym]keyPos{}
	for i := 0; i < n; i++ {
		for lvl := 0; lvl < min(2, d.perKC); lvl++ {
			ks := m.Keysyms[i*d.perKC+lvl]
			if ks == 0 {
				continue
			}
			if _, seen := d.keymap[ks]; !seen {
				d.keymap[ks] = keyPos{code: d.minKC + xproto.Keycode(i), shift: lvl == 1}
			}
		}
	}
	return nil
}

// spares are the keycodes with no keysym, for characters the keyboard
// lacks.
func (d *display) spares() []xproto.Keycode {
	n := int(d.maxKC) - int(d.minKC) + 1
	m, err := xproto.GetKeyboardMapping(d.x, d.minKC, byte(n)).Reply()
	if err != nil {
		return nil
	}
	var out []xproto.Keycode
	for i := n - 1; i >= 0; i-- {
		empty := true
		for lvl := 0; lvl < d.perKC; lvl++ {
			if m.Keysyms[i*d.perKC+lvl] != 0 {
				empty = false
			}
		}
		if empty {
			out = append(out, d.minKC+xproto.Keycode(i))
		}
	}
	return out
}

const keysymShift = 0xffe1

// remapSettle is how long clients get to read a changed keyboard map
// (MappingNotify) before a key on it is pressed, and after, before it is
// taken back.
const remapSettle = 100 * time.Millisecond

// withKeys makes every keysym of syms typeable for the duration of f: the
// ones the keyboard lacks go on spare keycodes, which are emptied again
// afterwards.
func (d *display) withKeys(syms []xproto.Keysym, f func(map[xproto.Keysym]keyPos) error) error {
	pos := map[xproto.Keysym]keyPos{}
	var missing []xproto.Keysym
	for _, ks := range syms {
		if p, ok := d.keymap[ks]; ok {
			pos[ks] = p
		} else if _, seen := pos[ks]; !seen {
			pos[ks] = keyPos{}
			missing = append(missing, ks)
		}
	}
	if len(missing) == 0 {
		return f(pos)
	}
	spares := d.spares()
	if len(spares) < len(missing) {
		return fmt.Errorf("%d characters are not on the keyboard and only %d keys are free to map them", len(missing), len(spares))
	}
	empty := make([]xproto.Keysym, d.perKC)
	defer func() {
		time.Sleep(remapSettle)
		for _, kc := range spares[:len(missing)] {
			_ = xproto.ChangeKeyboardMappingChecked(d.x, 1, kc, byte(d.perKC), empty).Check()
		}
	}()
	for i, ks := range missing {
		row := make([]xproto.Keysym, d.perKC)
		for l := range min(2, d.perKC) {
			row[l] = ks
		}
		if err := xproto.ChangeKeyboardMappingChecked(d.x, 1, spares[i], byte(d.perKC), row).Check(); err != nil {
			return fmt.Errorf("map keysym 0x%x: %w", ks, err)
		}
		pos[ks] = keyPos{code: spares[i]}
	}
	time.Sleep(remapSettle)
	return f(pos)
}

// press presses the keysyms of a combination in order and releases them in
// reverse.
func (d *display) press(syms []xproto.Keysym) error {
	return d.withKeys(syms, func(pos map[xproto.Keysym]keyPos) error { return d.chord(syms, pos) })
}

func (d *display) chord(syms []xproto.Keysym, pos map[xproto.Keysym]keyPos) error {
	var codes []xproto.Keycode
	for _, ks := range syms {
		p := pos[ks]
		if p.shift {
			codes = append(codes, d.keymap[keysymShift].code)
		}
		codes = append(codes, p.code)
	}
	for _, kc := range codes {
		if err := d.fake(xproto.KeyPress, byte(kc), 0, 0); err != nil {
			return err
		}
	}
	for i := len(codes) - 1; i >= 0; i-- {
		if err := d.fake(xproto.KeyRelease, byte(codes[i]), 0, 0); err != nil {
			return err
		}
	}
	d.sync()
	return nil
}

// maxTyped bounds one type action (the keyboard has about 150 free keys
// for characters it lacks).
const maxTyped = 2000

// typeText types s one character at a time.
func (d *display) typeText(s string) error {
	var syms []xproto.Keysym
	for _, r := range s {
		syms = append(syms, runeKeysym(r))
	}
	return d.withKeys(syms, func(pos map[xproto.Keysym]keyPos) error {
		for _, ks := range syms {
			if err := d.chord([]xproto.Keysym{ks}, pos); err != nil {
				return err
			}
		}
		return nil
	})
}

// runeKeysym is the keysym that types r: Latin-1 as itself, controls by
// name, the rest as Unicode keysyms.
func runeKeysym(r rune) xproto.Keysym {
	switch {
	case r == '\n':
		return 0xff0d // Return
	case r == '\t':
		return 0xff09 // Tab
	case r >= 0x20 && r <= 0x7e, r >= 0xa0 && r <= 0xff:
		return xproto.Keysym(r)
	}
	return xproto.Keysym(0x01000000 | uint32(r))
}
