package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// netMode is how a command without network gets its empty network namespace.
type netMode int

const (
	netNone netMode = iota
	// netUnshare: the starting thread unshares its network namespace (needs
	// CAP_SYS_ADMIN, e.g. root) and brings loopback up, so the command can
	// still listen on and connect to 127.0.0.1 inside its own namespace.
	netUnshare
	// netUserns: the child is cloned into new user and network namespaces
	// (unprivileged). Loopback stays down. Go writes the child's uid/gid maps
	// from the already restricted starting thread, so this mode also lets the
	// command write beneath /proc (still subject to file modes and to
	// Landlock's ptrace scoping).
	netUserns
)

// facility is what this machine offers, found once by probing.
type facility struct {
	abi    int // Landlock ABI version; 0 when unavailable
	abiErr error
	net    netMode
	netErr error
}

var probed = sync.OnceValue(probe)

// Sandbox says which mechanism sandboxed commands use, and whether every
// Policy can be honoured (for crew doctor). When ok is false, commands that
// need what is missing are refused with ErrNoSandbox.
func Sandbox() (mechanism string, ok bool) {
	f := probed()
	switch {
	case f.abiErr != nil:
		return fmt.Sprintf("none (Landlock unavailable: %v); sandboxed shell commands are refused", f.abiErr), false
	case f.net == netUnshare:
		return fmt.Sprintf("Landlock ABI %d + network namespace", f.abi), true
	case f.net == netUserns:
		return fmt.Sprintf("Landlock ABI %d + user and network namespaces (loopback down, /proc writable)", f.abi), true
	default:
		return fmt.Sprintf("Landlock ABI %d only (no network namespace: %v); shell_network false is refused", f.abi, f.netErr), false
	}
}

func probe() facility {
	var f facility
	f.abi, f.abiErr = landlockABI()
	if f.abiErr != nil {
		return f
	}
	// Prove each network mode by running a real sandboxed command.
	var errs []error
	for _, m := range []netMode{netUnshare, netUserns} {
		try := facility{abi: f.abi, net: m}
		out, err := run(context.Background(), Command{Script: "exit 0", Dir: "/", Sandbox: &Policy{}}, try)
		if err == nil && out.ExitCode != 0 {
			err = fmt.Errorf("exit code %d: %s", out.ExitCode, out.Text)
		}
		if err == nil {
			f.net = m
			return f
		}
		errs = append(errs, err)
	}
	f.netErr = errors.Join(errs...)
	return f
}

// sandbox is one sandboxed command's setup.
type sandbox struct {
	pol Policy
	fac facility
	tmp string // private temp dir, removed by cleanup
}

func prepare(p Policy, f facility) (*sandbox, error) {
	if f.abiErr != nil {
		return nil, fmt.Errorf("%w: landlock: %v", ErrNoSandbox, f.abiErr)
	}
	if !p.Network && f.net == netNone {
		return nil, fmt.Errorf("%w: no network namespace: %v", ErrNoSandbox, f.netErr)
	}
	tmp, err := os.MkdirTemp("", "crew-shell-")
	if err != nil {
		return nil, fmt.Errorf("shell: private temp dir: %w", err)
	}
	return &sandbox{pol: p, fac: f, tmp: tmp}, nil
}

func (s *sandbox) cleanup() { os.RemoveAll(s.tmp) }

func (s *sandbox) configure(cmd *exec.Cmd) {
	if s.pol.Network || s.fac.net != netUserns {
		return
	}
	a := cmd.SysProcAttr
	a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	a.GidMappingsEnableSetgroups = false
}

// start restricts a fresh OS thread and starts cmd from it: the child
// inherits the thread's Landlock domain and network namespace. The thread
// stays locked, so the runtime destroys it when the goroutine returns and no
// other goroutine ever runs restricted. (The runtime also never clones new
// threads from a locked one.)
func (s *sandbox) start(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- s.startHere(cmd)
	}()
	return <-errc
}

func (s *sandbox) startHere(cmd *exec.Cmd) error {
	if !s.pol.Network && s.fac.net == netUnshare {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("%w: unshare network namespace: %v", ErrNoSandbox, err)
		}
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("%w: loopback in new network namespace: %v", ErrNoSandbox, err)
		}
	}
	writable := append([]string{s.tmp}, s.pol.WritePaths...)
	if !s.pol.Network && s.fac.net == netUserns {
		writable = append(writable, "/proc")
	}
	if err := restrict(s.fac.abi, writable, !s.pol.Network); err != nil {
		return fmt.Errorf("%w: landlock: %v", ErrNoSandbox, err)
	}
	return cmd.Start()
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// rulesetAttr is struct landlock_ruleset_attr up to ABI 6 (scoped).
type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

func landlockABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, errno
	}
	return int(v), nil
}

// Write-like rights: with these handled and reads left alone, a command may
// read and execute anything its user can, and write only where a rule allows.
const writeRights = unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
	unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
	unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
	unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
	unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
	unix.LANDLOCK_ACCESS_FS_MAKE_SYM

// devices stay writable in every sandbox: shells redirect to them routinely.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}

// restrict puts the calling thread in a new Landlock domain where only
// writable (and devices) may be written.
func restrict(abi int, writable []string, noNet bool) error {
	handled := uint64(writeRights)
	fileRights := uint64(unix.LANDLOCK_ACCESS_FS_WRITE_FILE)
	if abi >= 2 {
		handled |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		handled |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
		fileRights |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	attr := rulesetAttr{handledFS: handled}
	size := unsafe.Sizeof(attr.handledFS)
	if abi >= 6 {
		attr.scoped = unix.LANDLOCK_SCOPE_SIGNAL
		if noNet {
			attr.scoped |= unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		}
		size = unsafe.Sizeof(attr)
	}
	rfd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("create ruleset: %w", errno)
	}
	defer unix.Close(int(rfd))

	for _, p := range append(writable, devices...) {
		if err := allow(int(rfd), p, handled, fileRights); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, rfd, 0, 0); errno != 0 {
		return fmt.Errorf("restrict self: %w", errno)
	}
	return nil
}

// allow adds a rule letting path (and, for a directory, everything beneath
// it) be written. A path that does not exist is skipped.
func allow(ruleset int, path string, dirRights, fileRights uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	rights := dirRights
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		rights = fileRights
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("rule for %s: %w", path, errno)
	}
	return nil
}
