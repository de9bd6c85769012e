// Package desktoptest starts a private graphical session for tests of the
// desktop helper: Xvfb on a display of its own, a private D-Bus session
// bus, the accessibility bus launcher, and apps in it (gtk3-widget-factory),
// with their own HOME and XDG_RUNTIME_DIR. Everything it starts it stops by
// process id.
//
// Without the programs (Debian: xvfb, gtk-3-examples, at-spi2-core, dbus)
// the tests skip, unless CREW_REQUIRE_DESKTOP=1 (set by .ci/run) makes
// that a failure.
package desktoptest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/jezek/xgb"
)

// Programs a session needs.
var (
	Xvfb        = "Xvfb"
	DBusDaemon  = "dbus-daemon"
	BusLauncher = "/usr/libexec/at-spi-bus-launcher"
	Factory     = "gtk3-widget-factory"
)

// quietX silences xgb's process-wide logger once.
var quietX sync.Once

// ErrMissing: a program the session needs is not installed.
var ErrMissing = errors.New("desktop test programs missing")

// Required reports whether missing programs fail the tests rather than
// skip them.
func Required() bool { return os.Getenv("CREW_REQUIRE_DESKTOP") == "1" }

// Session is a running private graphical session.
type Session struct {
	Display string // ":N"
	Bus     string // DBUS_SESSION_BUS_ADDRESS
	Home    string // HOME
	Runtime string // XDG_RUNTIME_DIR
	Width   int
	Height  int

	dir   string
	procs []*exec.Cmd // stopped in reverse order
	extra []int       // processes the buses started for us (the registry)
}

// Missing names the programs the session needs that are not installed.
func Missing() []string {
	var out []string
	for _, p := range []string{Xvfb, DBusDaemon, BusLauncher, Factory} {
		if _, err := exec.LookPath(p); err != nil {
			out = append(out, p)
		}
	}
	return out
}

// Start starts Xvfb, the session bus and the accessibility bus.
func Start() (s *Session, err error) {
	quietX.Do(func() { xgb.Logger = log.New(io.Discard, "", 0) }) // it complains of a missing ~/.Xauthority
	if m := Missing(); len(m) > 0 {
		return nil, fmt.Errorf("%w: %s (apt-get install xvfb gtk-3-examples at-spi2-core dbus)", ErrMissing, strings.Join(m, ", "))
	}
	dir, err := os.MkdirTemp("", "crew-desktop-session-")
	if err != nil {
		return nil, err
	}
	s = &Session{dir: dir, Home: filepath.Join(dir, "home"), Runtime: filepath.Join(dir, "run"), Width: 1024, Height: 768}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	for _, d := range []string{s.Home, s.Runtime} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return s, err
		}
	}
	if err := s.startXvfb(); err != nil {
		return s, err
	}
	if err := s.startBus(); err != nil {
		return s, err
	}
	launcher := exec.Command(BusLauncher, "--launch-immediately")
	if _, err := s.start(launcher); err != nil {
		return s, err
	}
	if err := s.waitFor("the accessibility bus", func() bool { return s.a11yAddress() != "" }); err != nil {
		return s, err
	}
	return s, nil
}

// Env is the environment of a program in the session.
func (s *Session) Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "HOME", "XDG_RUNTIME_DIR", "WAYLAND_DISPLAY", "XAUTHORITY", "NO_AT_BRIDGE", "GTK_A11Y":
			continue
		}
		env = append(env, kv)
	}
	return append(env, s.own()...)
}

// own is what Env sets for the session.
func (s *Session) own() []string {
	return []string{"DISPLAY=" + s.Display, "DBUS_SESSION_BUS_ADDRESS=" + s.Bus, "HOME=" + s.Home,
		"XDG_RUNTIME_DIR=" + s.Runtime, "GDK_BACKEND=x11", "NO_AT_BRIDGE=0"}
}

// Setenv points this process at the session (for a helper run in-process).
func (s *Session) Setenv() {
	for _, kv := range s.own() {
		k, v, _ := strings.Cut(kv, "=")
		os.Setenv(k, v)
	}
}

func (s *Session) start(cmd *exec.Cmd) (*exec.Cmd, error) {
	cmd.Env = s.Env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cmd.Stderr == nil {
		f, err := os.Create(filepath.Join(s.dir, filepath.Base(cmd.Path)+".log"))
		if err == nil {
			cmd.Stdout, cmd.Stderr = f, f
		}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	s.procs = append(s.procs, cmd)
	return cmd, nil
}

// startXvfb starts Xvfb on a free display (it names it on -displayfd).
func (s *Session) startXvfb() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command(Xvfb, "-displayfd", "3", "-screen", "0", fmt.Sprintf("%dx%dx24", s.Width, s.Height), "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	_, err = s.start(cmd)
	w.Close()
	if err != nil {
		return err
	}
	line, err := readLine(r, 20*time.Second)
	if err != nil {
		return fmt.Errorf("Xvfb did not name its display: %w", err)
	}
	s.Display = ":" + strings.TrimSpace(line)
	// Clients must be able to connect before the session is handed out.
	return s.waitFor("an X connection to "+s.Display, func() bool {
		c, err := xgb.NewConnDisplay(s.Display)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

// startBus starts a private session bus in the foreground (so its pid is
// ours to stop).
func (s *Session) startBus() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command(DBusDaemon, "--session", "--nofork", "--print-address=3")
	cmd.ExtraFiles = []*os.File{w}
	_, err = s.start(cmd)
	w.Close()
	if err != nil {
		return err
	}
	line, err := readLine(r, 20*time.Second)
	if err != nil {
		return fmt.Errorf("dbus-daemon did not print its address: %w", err)
	}
	s.Bus = strings.TrimSpace(line)
	return nil
}

func readLine(r *os.File, d time.Duration) (string, error) {
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() { // ends when the pipe's writer closes or writes
		l, err := bufio.NewReader(r).ReadString('\n')
		ch <- res{l, err}
	}()
	select {
	case x := <-ch:
		return x.line, x.err
	case <-time.After(d):
		return "", errors.New("timed out")
	}
}

// sessionCall calls a method on the session bus.
func (s *Session) sessionCall(dest, path, method string, out any, args ...any) error {
	c, err := dbus.Connect(s.Bus)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return c.Object(dest, dbus.ObjectPath(path)).CallWithContext(ctx, method, 0, args...).Store(out)
}

func (s *Session) a11yAddress() string {
	var addr string
	if s.sessionCall("org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus.GetAddress", &addr) != nil {
		return ""
	}
	return addr
}

// StartApp starts a program in the session and waits until ready says it
// is up (nil: no wait).
func (s *Session) StartApp(ready func() bool, name string, args ...string) (*exec.Cmd, error) {
	cmd, err := s.start(exec.Command(name, args...))
	if err != nil {
		return nil, err
	}
	if ready != nil {
		if err := s.waitFor(name, ready); err != nil {
			return cmd, err
		}
	}
	return cmd, nil
}

// StartFactory starts gtk3-widget-factory and waits until its accessible
// tree is on the accessibility bus. A factory that exits before (on a
// loaded machine GTK has been seen to fail to open a display that
// answers) is started again, up to three times.
func (s *Session) StartFactory() (*exec.Cmd, error) {
	var last error
	for range 3 {
		cmd, err := s.start(exec.Command(Factory))
		if err != nil {
			return nil, err
		}
		exited := make(chan struct{})
		go func() { cmd.Process.Wait(); close(exited) }() // ends with the process
		err = s.waitFor("gtk3-widget-factory on the accessibility bus", func() bool {
			select {
			case <-exited:
				return true
			default:
				return s.HasAccessibleApp(uint32(cmd.Process.Pid))
			}
		})
		select {
		case <-exited:
			last = fmt.Errorf("gtk3-widget-factory exited: %s", s.logTail(Factory))
			continue
		default:
		}
		return cmd, err
	}
	return nil, last
}

// logTail is the end of a program's log in the session folder.
func (s *Session) logTail(name string) string {
	b, _ := os.ReadFile(filepath.Join(s.dir, filepath.Base(name)+".log"))
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return strings.TrimSpace(string(b))
}

// HasAccessibleApp reports whether an app of process pid is registered on
// the accessibility bus with at least one window.
func (s *Session) HasAccessibleApp(pid uint32) bool {
	addr := s.a11yAddress()
	if addr == "" {
		return false
	}
	c, err := dbus.Connect(addr)
	if err != nil {
		return false
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var apps []struct {
		Bus  string
		Path dbus.ObjectPath
	}
	if c.Object("org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root").
		CallWithContext(ctx, "org.a11y.atspi.Accessible.GetChildren", 0).Store(&apps) != nil {
		return false
	}
	for _, a := range apps {
		var p uint32
		if c.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetConnectionUnixProcessID", 0, a.Bus).Store(&p) != nil || p != pid {
			continue
		}
		var n int32
		if c.Object(a.Bus, a.Path).StoreProperty("org.a11y.atspi.Accessible.ChildCount", &n) == nil && n > 0 {
			return true
		}
	}
	return false
}

// waitFor polls cond for up to a minute (a cold GTK start on a busy
// machine is slow).
func (s *Session) waitFor(what string, cond func() bool) error {
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up waiting for %s (logs in %s)", what, s.dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// Stop stops every process of the session by its id, the registry the
// accessibility bus started on its own included, and removes the folder.
func (s *Session) Stop() {
	if addr := s.a11yAddress(); addr != "" {
		if c, err := dbus.Connect(addr); err == nil {
			var p uint32
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if c.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetConnectionUnixProcessID", 0, "org.a11y.atspi.Registry").Store(&p) == nil && p > 1 {
				s.extra = append(s.extra, int(p))
			}
			cancel()
			c.Close()
		}
	}
	for _, pid := range s.extra {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		_ = syscall.Kill(-p.Process.Pid, syscall.SIGTERM) // its group: the launcher's own bus daemon too
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// Checked lists, in tree order, whether each showing element of the
// app of process pid with this role and name is checked, read straight
// from the accessibility bus (so a test can confirm what the helper did
// without asking the helper).
func (s *Session) Checked(pid uint32, role, name string) ([]bool, error) {
	addr := s.a11yAddress()
	if addr == "" {
		return nil, errors.New("no accessibility bus")
	}
	c, err := dbus.Connect(addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	type node struct {
		Bus  string
		Path dbus.ObjectPath
	}
	call := func(n node, method string, out any) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return c.Object(n.Bus, n.Path).CallWithContext(ctx, "org.a11y.atspi.Accessible."+method, 0).Store(out)
	}
	var apps []node
	if err := call(node{"org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root"}, "GetChildren", &apps); err != nil {
		return nil, err
	}
	var out []bool
	var walk func(n node, depth int)
	walk = func(n node, depth int) {
		var st []uint32
		if depth > 40 || call(n, "GetState", &st) != nil || len(st) == 0 || st[0]&(1<<25) == 0 && depth > 1 {
			return // gone or not showing
		}
		var r string
		if call(n, "GetRoleName", &r) == nil && r == role {
			if v, err := c.Object(n.Bus, n.Path).GetProperty("org.a11y.atspi.Accessible.Name"); err == nil && v.Value() == name {
				out = append(out, st[0]&(1<<4) != 0)
			}
		}
		var kids []node
		if call(n, "GetChildren", &kids) == nil {
			for _, k := range kids {
				walk(k, depth+1)
			}
		}
	}
	for _, a := range apps {
		var p uint32
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := c.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.GetConnectionUnixProcessID", 0, a.Bus).Store(&p)
		cancel()
		if err == nil && p == pid {
			walk(a, 0)
			return out, nil
		}
	}
	return nil, fmt.Errorf("no accessible app of pid %d", pid)
}
