package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/godbus/dbus/v5"
)

// The accessibility bus (AT-SPI over D-Bus): toolkits with a bridge (GTK,
// Qt with accessibility on, Chromium/Electron with renderer accessibility)
// publish their widget trees there.

const (
	ifAccessible = "org.a11y.atspi.Accessible"
	ifComponent  = "org.a11y.atspi.Component"
	ifText       = "org.a11y.atspi.Text"
	registryName = "org.a11y.atspi.Registry"
	rootPath     = "/org/a11y/atspi/accessible/root"
	callTimeout  = 2 * time.Second
)

// AT-SPI state bits (atspi-constants.h).
const (
	stateChecked   = 4
	stateEditable  = 7
	stateEnabled   = 8
	stateFocusable = 11
	stateFocused   = 12
	statePressed   = 21
	stateSelected  = 23
	stateSensitive = 24
	stateShowing   = 25
	stateVisible   = 30
)

// states is an AT-SPI state set.
type states uint64

func (s states) has(bit uint) bool { return s&(1<<bit) != 0 }

// node is one accessible object.
type node struct {
	bus  string
	path dbus.ObjectPath
}

// atspi is a connection to the accessibility bus.
type atspi struct {
	conn *dbus.Conn
}

// connectATSPI finds the accessibility bus through the session bus
// (org.a11y.Bus) and connects to it.
func connectATSPI() (*atspi, error) {
	sess, err := dbus.ConnectSessionBus()
	if err != nil {
		return nil, fmt.Errorf("session bus: %w", err)
	}
	defer sess.Close()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var addr string
	if err := sess.Object("org.a11y.Bus", "/org/a11y/bus").CallWithContext(ctx, "org.a11y.Bus.GetAddress", 0).Store(&addr); err != nil {
		return nil, fmt.Errorf("accessibility bus address: %w", err)
	}
	conn, err := dbus.Connect(addr)
	if err != nil {
		return nil, fmt.Errorf("accessibility bus: %w", err)
	}
	return &atspi{conn: conn}, nil
}

func (a *atspi) Close() { a.conn.Close() }

func (a *atspi) call(n node, method string, out any, args ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	c := a.conn.Object(n.bus, n.path).CallWithContext(ctx, method, 0, args...)
	if c.Err != nil {
		return c.Err
	}
	if out == nil {
		return nil
	}
	return c.Store(out)
}

// ping reports whether the registry answers.
func (a *atspi) ping() bool {
	var n int32
	return a.conn.Object(registryName, rootPath).StoreProperty(ifAccessible+".ChildCount", &n) == nil
}

func (a *atspi) children(n node) ([]node, error) {
	var kids []struct {
		Bus  string
		Path dbus.ObjectPath
	}
	if err := a.call(n, ifAccessible+".GetChildren", &kids); err != nil {
		return nil, err
	}
	out := make([]node, 0, len(kids))
	for _, k := range kids {
		if k.Path != "/org/a11y/atspi/null" {
			out = append(out, node{k.Bus, k.Path})
		}
	}
	return out, nil
}

func (a *atspi) role(n node) (string, error) {
	var r string
	err := a.call(n, ifAccessible+".GetRoleName", &r)
	return r, err
}

func (a *atspi) name(n node) (string, error) {
	v, err := a.conn.Object(n.bus, n.path).GetProperty(ifAccessible + ".Name")
	if err != nil {
		return "", err
	}
	s, _ := v.Value().(string)
	return s, nil
}

func (a *atspi) states(n node) (states, error) {
	var s []uint32
	if err := a.call(n, ifAccessible+".GetState", &s); err != nil {
		return 0, err
	}
	var out states
	for i, w := range s {
		if i < 2 {
			out |= states(w) << (32 * i)
		}
	}
	return out, nil
}

func (a *atspi) interfaces(n node) ([]string, error) {
	var s []string
	err := a.call(n, ifAccessible+".GetInterfaces", &s)
	return s, err
}

// extents is n's rectangle in screen coordinates.
func (a *atspi) extents(n node) (x, y, w, h int, err error) {
	var r struct{ X, Y, W, H int32 }
	if err := a.call(n, ifComponent+".GetExtents", &r, uint32(0)); err != nil {
		return 0, 0, 0, 0, err
	}
	return int(r.X), int(r.Y), int(r.W), int(r.H), nil
}

func (a *atspi) text(n node) (string, error) {
	var s string
	err := a.call(n, ifText+".GetText", &s, int32(0), int32(-1))
	return s, err
}

// appOf returns the accessible application whose process is pid.
func (a *atspi) appOf(pid uint32) (node, bool, error) {
	apps, err := a.children(node{registryName, rootPath})
	if err != nil {
		return node{}, false, err
	}
	for _, app := range apps {
		var p uint32
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		err := a.conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetConnectionUnixProcessID", 0, app.bus).Store(&p)
		cancel()
		if err == nil && p == pid {
			return app, true, nil
		}
	}
	return node{}, false, nil
}

// info is what the helper knows of one element.
type info struct {
	node
	role   string
	name   string
	states states
	ifaces []string
}

func (a *atspi) info(n node) (info, error) {
	in := info{node: n}
	var err error
	if in.role, err = a.role(n); err != nil {
		return in, err
	}
	if in.name, err = a.name(n); err != nil {
		return in, err
	}
	if in.states, err = a.states(n); err != nil {
		return in, err
	}
	in.ifaces, _ = a.interfaces(n)
	return in, nil
}

// errGone: the element is no longer on the bus.
var errGone = errors.New("the element is gone")

// secure reports whether the element is a password field.
func (in info) secure() bool { return in.role == "password text" }

// editable: text typed there lands in it.
func (in info) editable() bool {
	return in.states.has(stateEditable) &&
		(slices.Contains(in.ifaces, "org.a11y.atspi.EditableText") || slices.Contains(in.ifaces, ifText))
}
