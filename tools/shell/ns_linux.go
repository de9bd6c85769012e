package shell

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// A command runs as a chain of three processes:
//
//	server ─clone(NEWNS|NEWPID|NEWNET[|NEWUSER])→ stage 1 (init, pid 1)
//	stage 1 ─clone(NEWUSER|NEWNS)→ stage 2 ─execve→ /bin/sh -c script
//
// Stage 1 is the binary itself re-executed (argv[0] stage1Name). As pid 1 of
// the new PID namespace it mounts a fresh /proc, a minimal /dev and the view
// of the home (the host's sockets covered), waits for the shell, reports its
// status on fd 3 and exits; the kernel then kills whatever is left in the
// namespace. Stage 2 runs in a further user and mount namespace, so every
// mount stage 1 made is locked (mount_namespaces(7)): the command cannot
// unmount the cover over the home or over the host's /proc, even as root. Stage 2 applies the sandbox
// (no_new_privs, Landlock, the seccomp filter) to itself and executes the
// shell.
const (
	stage1Name = "crew-shell-init"
	stage2Name = "crew-shell-exec"
)

// stageConfig is what the server tells stage 1 (and stage 1 tells stage 2),
// as JSON in argv[1]. It holds no secret: the script is visible to ps anyway.
type stageConfig struct {
	Script string   `json:"script"`
	Exec   []string `json:"exec,omitempty"` // a program instead of /bin/sh -c Script
	Dir    string   `json:"dir"`
	View   *View    `json:"view,omitempty"`
	// Cover and Plug are the host's sockets to hide (see hostSockets):
	// directories to cover whole, single sockets to plug.
	Cover  []string `json:"cover,omitempty"`
	Plug   []string `json:"plug,omitempty"`
	NewNet bool     `json:"new_net,omitempty"` // bring loopback up in the fresh network namespace
	// Proxy: listen on ProxyAddr and hand the listener back on proxyFD.
	Proxy bool `json:"proxy,omitempty"`
	// MapAll: stage 1 is real root, so every id maps into the command's user
	// namespace unchanged (root stays root, setuid works); otherwise only the
	// caller's own uid and gid are mapped.
	MapAll bool `json:"map_all,omitempty"`
	// UID and GID are the server's, which the command keeps when not MapAll
	// (stage 1 itself is root of its own user namespace then).
	UID       int      `json:"uid"`
	GID       int      `json:"gid"`
	Landlock  int      `json:"landlock,omitempty"` // ABI to restrict writes with; 0: no Landlock
	Writable  []string `json:"writable,omitempty"` // where a Landlock-restricted command may write
	ScopeUnix bool     `json:"scope_unix,omitempty"`
	BlockUnix bool     `json:"block_unix,omitempty"` // seccomp: no AF_UNIX sockets
}

func init() {
	if len(os.Args) != 2 {
		return
	}
	switch os.Args[0] {
	case stage1Name:
		stage1(os.Args[1])
	case stage2Name:
		stage2(os.Args[1])
	}
}

// exit leaves without the runtime's exit hooks (a race-enabled binary
// would otherwise sleep a second at exit).
func exit(code int) {
	unix.RawSyscall(unix.SYS_EXIT_GROUP, uintptr(code), 0, 0)
	panic("exit_group returned")
}

// setupFailed is the exit code of a stage that failed before the shell ran.
const setupFailed = 125

func stage1(arg string) {
	status := os.NewFile(3, "status")
	unix.CloseOnExec(3)
	unix.CloseOnExec(proxyFD) // when there is one: never the command's
	fail := func(err error) {
		fmt.Fprintf(status, "error %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		exit(setupFailed)
	}
	var c stageConfig
	if err := json.Unmarshal([]byte(arg), &c); err != nil {
		fail(fmt.Errorf("stage config: %w", err))
	}
	if err := isolate(c); err != nil {
		fail(err)
	}

	// The owner's stop sends SIGTERM to the whole group: the init lives
	// on to reap the shell and report how it ended (a caught signal is
	// back to its default in the shell).
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM)
	errR, errW, err := os.Pipe()
	if err != nil {
		fail(err)
	}
	cmd := exec.Command("/proc/self/exe", arg)
	cmd.Args[0] = stage2Name
	cmd.Dir = c.Dir
	cmd.Env = os.Environ()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{errW}
	a := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS}
	if c.MapAll {
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
		a.GidMappingsEnableSetgroups = true
	} else {
		// Stage 1 is root (0) of a user namespace mapping the server's ids;
		// the command gets the server's ids back, and no capability.
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: c.UID, HostID: 0, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: c.GID, HostID: 0, Size: 1}}
	}
	cmd.SysProcAttr = a
	if err := cmd.Start(); err != nil {
		fail(fmt.Errorf("start /bin/sh: %w", err))
	}
	errW.Close()
	msg, _ := io.ReadAll(errR) // EOF once stage 2 executed the shell (close-on-exec) or died
	if len(msg) > 0 {
		fail(fmt.Errorf("%s", strings.TrimSpace(string(msg))))
	}
	child := cmd.Process.Pid
	// As init, reap every orphan until the shell itself ends.
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			fail(fmt.Errorf("wait: %w", err))
		}
		if pid != child {
			continue
		}
		switch {
		case ws.Exited():
			fmt.Fprintf(status, "exit %d\n", ws.ExitStatus())
		case ws.Signaled():
			fmt.Fprintf(status, "signal %d\n", int(ws.Signal()))
		default:
			continue
		}
		exit(0)
	}
}

// isolate sets up stage 1's namespaces: loopback and the proxy's
// listener, the mount view (the host's sockets covered, the home hidden),
// /dev and a fresh /proc.
func isolate(c stageConfig) error {
	if c.NewNet {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("%w: its loopback could not be brought up: %v", ErrNoNetwork, err)
		}
	}
	if c.Proxy {
		if err := handProxyListener(); err != nil {
			return fmt.Errorf("%w: the proxy's listener could not be opened in it: %v", ErrNoNetwork, err)
		}
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := hideSockets(c.Cover, c.Plug); err != nil {
		return fmt.Errorf("hide the host's sockets: %w", err)
	}
	if c.View != nil {
		if err := mountView(*c.View); err != nil {
			return fmt.Errorf("hide the home: %w", err)
		}
	}
	if err := mountDev(); err != nil {
		return fmt.Errorf("minimal /dev: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount a fresh /proc: %w", err)
	}
	return nil
}

// tree is a detached copy of a mount tree, to be put back under a cover.
type tree struct {
	fd     int
	target string
	dir    bool
}

// detach clones the mount tree at path (following symlinks), read-only
// unless rw. A path that does not exist gives ok false.
func detach(path, target string, rw bool) (t tree, ok bool, err error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err == unix.ENOENT || err == unix.ENOTDIR {
		return t, false, nil
	}
	if err != nil {
		return t, false, fmt.Errorf("open_tree %s: %w", path, err)
	}
	if !rw {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			unix.Close(fd)
			return t, false, fmt.Errorf("read-only %s: %w", path, err)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return t, false, err
	}
	return tree{fd: fd, target: target, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR}, true, nil
}

// attach mounts t at its target, creating the mountpoint inside a cover
// (below covered) when missing. A missing mountpoint inside a tree already
// attached is skipped.
func attach(t tree, covered string, attached []string) error {
	defer unix.Close(t.fd)
	if _, err := os.Lstat(t.target); err != nil {
		for _, a := range attached {
			if within(a, t.target) {
				return nil
			}
		}
		if !within(covered, t.target) {
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(t.target), 0o755); err != nil {
			return err
		}
		if t.dir {
			err = os.Mkdir(t.target, 0o755)
		} else {
			err = os.WriteFile(t.target, nil, 0o644)
		}
		if err != nil {
			return err
		}
	}
	if err := unix.MoveMount(t.fd, "", unix.AT_FDCWD, t.target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount %s: %w", t.target, err)
	}
	return nil
}

func mountView(v View) error {
	if !filepath.IsAbs(v.Home) || filepath.Clean(v.Home) == "/" {
		return fmt.Errorf("home %q is not an absolute path below /", v.Home)
	}
	home, err := filepath.EvalSymlinks(v.Home)
	if err != nil {
		return err
	}
	type entry struct {
		path string
		rw   bool
	}
	var want []entry
	for _, p := range v.Read {
		want = append(want, entry{p, false})
	}
	for _, p := range v.Write {
		want = append(want, entry{p, true})
	}
	var trees []tree
	for _, e := range want {
		if !within(v.Home, e.path) {
			return fmt.Errorf("%s is not in the home", e.path)
		}
		rel, _ := filepath.Rel(v.Home, e.path)
		t, ok, err := detach(e.path, filepath.Join(home, rel), e.rw)
		if err != nil {
			return err
		}
		if ok {
			trees = append(trees, t)
		}
	}
	sort.SliceStable(trees, func(i, j int) bool { return trees[i].target < trees[j].target })
	if err := unix.Mount("crew-hidden", home, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("cover %s: %w", home, err)
	}
	var attached []string
	for _, t := range trees {
		if err := attach(t, home, attached); err != nil {
			return err
		}
		attached = append(attached, t.target)
	}
	if err := unix.Mount("", home, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("read-only cover: %w", err)
	}
	for _, m := range v.Mask {
		if err := unix.Mount("crew-hidden", m, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=4k"); err != nil && err != unix.ENOENT {
			return fmt.Errorf("cover %s: %w", m, err)
		}
	}
	return nil
}

// devNodes are the devices a command finds in its /dev.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// mountDev replaces /dev with a small tmpfs holding devNodes, the usual
// /proc/self/fd links and a private /dev/shm: no disk, memory or terminal
// device of the machine is reachable.
func mountDev() error {
	var trees []tree
	for _, n := range devNodes {
		t, ok, err := detach("/dev/"+n, "/dev/"+n, true)
		if err != nil {
			return err
		}
		if ok {
			trees = append(trees, t)
		}
	}
	if err := unix.Mount("crew-dev", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return err
	}
	for _, t := range trees {
		if err := attach(t, "/dev", nil); err != nil {
			return err
		}
	}
	links := map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"}
	for name, to := range links {
		if err := os.Symlink(to, "/dev/"+name); err != nil {
			return err
		}
	}
	if err := os.Mkdir("/dev/shm", 0o1777); err != nil {
		return err
	}
	if err := unix.Mount("crew-shm", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return err
	}
	return unix.Mount("", "/dev", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, "")
}

func stage2(arg string) {
	errw := os.NewFile(3, "error")
	unix.CloseOnExec(3)
	fail := func(err error) {
		fmt.Fprintf(errw, "%v\n", err)
		exit(setupFailed)
	}
	var c stageConfig
	if err := json.Unmarshal([]byte(arg), &c); err != nil {
		fail(fmt.Errorf("stage config: %w", err))
	}
	// init functions run on the main thread, locked: what follows restricts
	// this thread, the only one that survives execve.
	if c.Landlock > 0 || c.BlockUnix {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			fail(fmt.Errorf("%w: no_new_privs: %v", ErrNoSandbox, err))
		}
	}
	if c.Landlock > 0 {
		if err := restrict(c.Landlock, c.Writable, c.ScopeUnix); err != nil {
			fail(fmt.Errorf("%w: landlock: %v", ErrNoSandbox, err))
		}
	}
	if c.BlockUnix {
		if err := blockUnixSockets(); err != nil {
			fail(fmt.Errorf("%w: unix-socket block: %v", ErrNoSandbox, err))
		}
	}
	path, argv := "/bin/sh", []string{"/bin/sh", "-c", c.Script}
	if len(c.Exec) > 0 {
		argv = c.Exec
		p, err := exec.LookPath(argv[0])
		if err != nil {
			fail(fmt.Errorf("exec %s: %w", argv[0], err))
		}
		path = p
	}
	err := unix.Exec(path, argv, os.Environ())
	fail(fmt.Errorf("exec %s: %w", path, err))
}

// parseStatus reads stage 1's report: "exit N", "signal N" or "error MSG".
func parseStatus(line string) (code int, sig syscall.Signal, setupErr string, ok bool) {
	kind, val, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch kind {
	case "exit":
		n, err := strconv.Atoi(val)
		return n, 0, "", err == nil
	case "signal":
		n, err := strconv.Atoi(val)
		return -1, syscall.Signal(n), "", err == nil
	case "error":
		return -1, 0, val, true
	}
	return 0, 0, "", false
}
