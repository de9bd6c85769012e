// Package wire is the desktop helper's socket protocol (R-DSK): the one
// contract between crew-desktop and the server's computer_* tools, which
// import it and nothing else of the helper.
//
// A client connects to <home>/desktop/sock, writes one Request as a JSON
// line and reads one Answer as a JSON line; then the helper closes the
// connection. Both sides use the socket only when its folder is owned by
// their own uid and nobody else can write it (SafeDir), and each side
// checks the other's uid (SO_PEERCRED).
package wire

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Version is the protocol's version, answered by the state request.
const Version = 1

// MaxLine bounds a request or answer line (a full-screen PNG in base64
// fits with room to spare).
const MaxLine = 64 << 20

// Request ops.
const (
	OpState      = "state"
	OpScreenshot = "screenshot"
	OpObserve    = "observe"
	OpAct        = "act"
)

// Act actions.
const (
	ActClick  = "click"
	ActType   = "type"
	ActKey    = "key"
	ActScroll = "scroll"
	ActFront  = "front" // bring an app to the front
)

// Request is one line a client sends.
type Request struct {
	Op string `json:"op"`
	// Window: a screenshot of the frontmost window only, not the screen.
	Window bool `json:"window,omitempty"`
	Act    *Act `json:"act,omitempty"`
	// Apps must be absent: the helper takes the apps it shows and acts on
	// (X11 WM_CLASS class names or executable base names) from the home's
	// computer_apps or its --apps flag, and refuses a request naming any.
	Apps []string `json:"apps,omitempty"`
}

// Act is one action on the screen.
type Act struct {
	Action string `json:"action"`
	// FrameID names the latest frame (screenshot or observe); every action
	// carries it.
	FrameID string `json:"frame_id"`
	// Ref names an element of the latest outline (click, type, scroll).
	Ref string `json:"ref,omitempty"`
	// X and Y are screen coordinates (click, scroll) when there is no Ref.
	X *int `json:"x,omitempty"`
	Y *int `json:"y,omitempty"`
	// Button is left (default), middle or right; Count 1 (default) or 2.
	Button string `json:"button,omitempty"`
	Count  int    `json:"count,omitempty"`
	Text   string `json:"text,omitempty"` // type
	Keys   string `json:"keys,omitempty"` // key: "ctrl+a", "Return", "shift+Tab"
	// DX and DY are scroll steps: positive is right and down.
	DX  int    `json:"dx,omitempty"`
	DY  int    `json:"dy,omitempty"`
	App string `json:"app,omitempty"` // front
}

// Refusal codes: why the helper did not act.
const (
	CodeBadRequest  = "bad_request"
	CodeNoDisplay   = "no_display"
	CodeLocked      = "locked"
	CodeStaleFrame  = "stale_frame"
	CodeStaleRef    = "stale_ref"
	CodeChanged     = "changed"
	CodeNotAllowed  = "not_allowed"
	CodeNotFront    = "not_frontmost"
	CodeSecure      = "secure_field"
	CodeNotEditable = "not_editable"
	CodeFailed      = "failed"
)

// Answer is the one line the helper sends back.
type Answer struct {
	// Error is why the request failed or was refused, for a person and the
	// model; Code is its kind (the Code* constants).
	Error string `json:"error,omitempty"`
	Code  string `json:"code,omitempty"`

	State *State `json:"state,omitempty"` // state, and with every frame

	// FrameID names the frame a screenshot or observe made.
	FrameID string `json:"frame_id,omitempty"`
	// PNG is the screenshot; Origin its top-left corner on the screen.
	PNG    []byte `json:"png,omitempty"`
	Origin *Point `json:"origin,omitempty"`

	// Outline is the frontmost app's accessibility outline (observe), one
	// element per line, actionable ones with [ref=eN]; Refs lists those.
	// NoBridge says the app has no accessibility tree: screenshot only.
	Outline  string    `json:"outline,omitempty"`
	Refs     []Element `json:"refs,omitempty"`
	NoBridge bool      `json:"no_bridge,omitempty"`

	Done string `json:"done,omitempty"` // act: what was done
}

// State is what the screen is showing.
type State struct {
	Version   int    `json:"version"` // the protocol's
	Helper    string `json:"helper"`  // the helper's name and release`
	Display   string `json:"display"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	Frontmost *App   `json:"frontmost,omitempty"`
	Locked    bool   `json:"locked"`
	// SecureInput: the keyboard goes to a password field or is grabbed
	// (a lock screen, a passphrase prompt, or an open menu).
	SecureInput bool `json:"secure_input"`
	AtSPI       bool `json:"atspi"` // the accessibility bus answers
}

// App is a top-level window and the program behind it.
type App struct {
	Class  string `json:"class"`  // WM_CLASS class name
	Exe    string `json:"exe"`    // executable base name, "" when unknown
	Title  string `json:"title"`  // window title
	Window uint32 `json:"window"` // X11 window id
	Rect   Rect   `json:"rect"`
}

// Element is one actionable element of an outline.
type Element struct {
	Ref  string `json:"ref"`
	Role string `json:"role"`
	Name string `json:"name"`
}

// Point is a screen position.
type Point struct {
	X int `json:"x"`
	Y int `json:"y"`
}

// Rect is a screen rectangle.
type Rect struct {
	X int `json:"x"`
	Y int `json:"y"`
	W int `json:"w"`
	H int `json:"h"`
}

// Matches reports whether app is one of names: its WM_CLASS class or its
// executable's base name, compared without case.
func (a *App) Matches(names []string) bool {
	if a == nil {
		return false
	}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n != "" && (strings.EqualFold(n, a.Class) || (a.Exe != "" && strings.EqualFold(n, a.Exe))) {
			return true
		}
	}
	return false
}

// Name is how the app is called to a person: its class, else its exe.
func (a *App) Name() string {
	if a.Class != "" {
		return a.Class
	}
	return a.Exe
}

// SocketPath is the helper's socket under home.
func SocketPath(home string) string { return filepath.Join(home, "desktop", "sock") }

// ErrUnsafe marks a socket or folder another user could reach or replace.
var ErrUnsafe = errors.New("unsafe desktop socket")

// SafeDir checks that dir is a directory owned by the current uid that
// nobody else can write (no group or other write bit), without following
// a symlink.
func SafeDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrUnsafe, dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%w: %s: no owner information", ErrUnsafe, dir)
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return fmt.Errorf("%w: %s is owned by uid %d, not %d", ErrUnsafe, dir, st.Uid, uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by others (mode %04o); chmod go-w it", ErrUnsafe, dir, fi.Mode().Perm())
	}
	return nil
}

// SafeSocket checks the socket at path: a socket owned by the current
// uid in a SafeDir folder.
func SafeSocket(path string) error {
	if err := SafeDir(filepath.Dir(path)); err != nil {
		return err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%w: %s is not a socket", ErrUnsafe, path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%w: %s is not owned by uid %d", ErrUnsafe, path, os.Getuid())
	}
	return nil
}
