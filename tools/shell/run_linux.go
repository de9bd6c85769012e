package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Output capture limits: the head and the tail of an output are kept.
const (
	captureHead = 512 << 10
	captureTail = 512 << 10
)

// pipeGrace bounds how long output is still read after the command's
// namespace is gone (nothing should hold the pipe then; this is a guard).
const pipeGrace = 2 * time.Second

// nsMode is how a command gets its mount and PID namespaces.
type nsMode int

const (
	nsNone nsMode = iota
	// nsRoot: the server is root and creates the namespaces directly.
	nsRoot
	// nsUser: the namespaces are created inside a new user namespace
	// (unprivileged); the command keeps the server's uid and gid.
	nsUser
)

func (m nsMode) String() string {
	switch m {
	case nsRoot:
		return "as root"
	case nsUser:
		return "in a user namespace"
	}
	return "none"
}

// facility is what this machine offers, found once by probing.
type facility struct {
	ns     nsMode
	nsErr  error
	netErr error // the namespaces work, but not with a network namespace of their own
	abi    int   // Landlock ABI version; 0 when unavailable
	abiErr error
	skip   skip // parts left out, to probe the others one by one
}

type skip uint8

const (
	skipLandlock skip = 1 << iota
	skipSeccomp
	// skipNetns leaves out the network namespace (and so the proxy): only
	// for probe's "exit 0" that tells a missing network namespace from
	// missing mount and PID namespaces. No command runs so.
	skipNetns
)

// probed returns what this machine offers. A probe that found no namespaces
// is not kept: a passing shortage (say, of user namespaces) must not refuse
// every later command.
func (s *Sandbox) probed() facility {
	s.probeMu.Lock()
	defer s.probeMu.Unlock()
	if s.found != nil {
		return *s.found
	}
	f := s.probe()
	if f.ns != nsNone && f.netErr == nil {
		s.found = &f
	}
	return f
}

// probe finds how to isolate commands by running a real one each way.
func (s *Sandbox) probe() facility {
	var f facility
	f.abi, f.abiErr = landlockABI()
	modes := []nsMode{nsUser}
	if os.Geteuid() == 0 {
		modes = []nsMode{nsRoot, nsUser}
	}
	var errs []error
	for _, m := range modes {
		try := f
		try.ns = m
		out, err := s.run(context.Background(), Command{Script: "exit 0", Dir: "/"}, try)
		if err == nil && out.ExitCode != 0 {
			err = fmt.Errorf("exit code %d: %s", out.ExitCode, out.Text)
		}
		if err == nil {
			return try
		}
		errs = append(errs, fmt.Errorf("%s: %w", m, err))
	}
	// Nothing works: if the same namespaces work without a network of
	// their own, that is what is missing (every command is refused all the
	// same, but saying so).
	for i, m := range modes {
		try := f
		try.ns, try.skip = m, skipNetns
		if out, err := s.run(context.Background(), Command{Script: "exit 0", Dir: "/"}, try); err == nil && out.ExitCode == 0 {
			f.ns, f.netErr = m, netnsCause(m, errs[i])
			return f
		}
	}
	f.nsErr = errors.Join(errs...)
	return f
}

// netnsCause says why mode m's namespaces failed with a network
// namespace: err without the "shell isolation unavailable" it came with,
// and the likely limit when the kernel's answer is no space left.
func netnsCause(m nsMode, err error) error {
	why := strings.TrimPrefix(strings.TrimPrefix(err.Error(), m.String()+": "), ErrNoIsolation.Error()+": ")
	if errors.Is(err, syscall.ENOSPC) {
		why += " (the user.max_net_namespaces limit is reached)"
	}
	return fmt.Errorf("%s: %s", m, why)
}

// Run runs c and returns its output. A command that fails or times out is
// not an error: see Output. Errors are ErrNoIsolation or ErrNoSandbox
// (nothing ran), a failure to start, or the context's error when ctx ended
// first (the command is killed and the partial output returned).
// A nil s runs nothing (ErrNoIsolation).
func (s *Sandbox) Run(ctx context.Context, c Command) (Output, error) {
	if s == nil {
		return Output{}, fmt.Errorf("%w: %w", ErrNoIsolation, errNoSandbox)
	}
	return s.run(ctx, c, s.probed())
}

func (s *Sandbox) run(ctx context.Context, c Command, f facility) (Output, error) {
	if f.ns == nsNone {
		return Output{}, fmt.Errorf("%w: no mount and PID namespaces: %v", ErrNoIsolation, f.nsErr)
	}
	if f.netErr != nil {
		return Output{}, fmt.Errorf("%w: this machine could not make one: %v", ErrNoNetwork, f.netErr)
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	timeout = min(timeout, MaxTimeout)
	dir := c.Dir
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return Output{}, fmt.Errorf("shell: start /bin/sh: %w", err)
		}
	}
	if fi, err := os.Stat(dir); err != nil {
		return Output{}, fmt.Errorf("shell: start /bin/sh: working directory: %w", err)
	} else if !fi.IsDir() {
		return Output{}, fmt.Errorf("shell: start /bin/sh: working directory %s is not a directory", dir)
	}

	cfg := stageConfig{Script: c.Script, Exec: c.Exec, Dir: dir, View: c.View, MapAll: f.ns == nsRoot, UID: os.Getuid(), GID: os.Getgid()}
	env := append(make([]string, 0, len(c.Env)+1), c.Env...) // never nil: nil would inherit ours
	// Every command has a network namespace of its own: none of the
	// host's interfaces, listeners or abstract Unix sockets are in it.
	flags := uintptr(syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET)
	cfg.NewNet = true
	networked := c.Sandbox == nil || c.Sandbox.Network
	if f.skip&skipNetns != 0 {
		flags &^= syscall.CLONE_NEWNET
		cfg.NewNet, networked = false, false
	}
	if p := c.Sandbox; p != nil {
		if f.abiErr != nil {
			return Output{}, fmt.Errorf("%w: landlock: %v", ErrNoSandbox, f.abiErr)
		}
		tmp, err := os.MkdirTemp("", "crew-shell-")
		if err != nil {
			return Output{}, fmt.Errorf("shell: private temp dir: %w", err)
		}
		defer os.RemoveAll(tmp)
		env = setEnv(env, "TMPDIR", tmp)
		cfg.Landlock = f.abi
		cfg.Writable = append([]string{tmp}, p.WritePaths...)
		if !p.Network {
			cfg.BlockUnix, cfg.ScopeUnix = true, true
		}
		if f.skip&skipLandlock != 0 {
			cfg.Landlock = 0
		}
		if f.skip&skipSeccomp != 0 {
			cfg.BlockUnix = false
		}
	}
	keep := append([]string{dir}, cfg.Writable...)
	if c.View != nil {
		keep = append(keep, c.View.Home)
	}
	if len(c.Exec) > 0 {
		keep = append(keep, c.Exec[0])
	}
	var err error
	if cfg.Cover, cfg.Plug, err = hostSockets(keep, s.netUnix); err != nil {
		return Output{}, err
	}
	// With network, the only way out is the proxy the caller serves on a
	// listener stage 1 opens inside the namespace (see ProxyAddr).
	var proxyMine, proxyTheirs *os.File
	if networked {
		if proxyMine, proxyTheirs, err = proxySocket(); err != nil {
			return Output{}, fmt.Errorf("%w: %v", ErrNoNetwork, err)
		}
		defer proxyMine.Close()
		defer proxyTheirs.Close()
		cfg.Proxy = true
		env = proxyEnv(env)
	}
	arg, err := json.Marshal(cfg)
	if err != nil {
		return Output{}, fmt.Errorf("shell: %w", err)
	}

	cmd := exec.Command("/proc/self/exe", string(arg))
	cmd.Args[0] = stage1Name
	cmd.Dir = "/"
	cmd.Env = env
	cmd.Stdin = c.Stdin
	// A session of its own: no controlling terminal, so /dev/tty cannot
	// reach the owner's terminal (no TIOCSTI into it); also its own
	// process group.
	attr := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: flags}
	if f.ns == nsUser {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		// Root of its own user namespace, so stage 1 keeps the capabilities
		// it needs to mount across its execve.
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	}
	cmd.SysProcAttr = attr

	var pipes []*os.File // the read ends
	var writers []*os.File
	newPipe := func() (*os.File, error) {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("shell: pipe: %w", err)
		}
		pipes, writers = append(pipes, r), append(writers, w)
		return w, nil
	}
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	statusW, err := newPipe()
	if err != nil {
		return Output{}, err
	}
	outW, err := newPipe()
	if err != nil {
		closeAll(pipes)
		closeAll(writers)
		return Output{}, err
	}
	cmd.Stdout, cmd.Stderr = outW, outW
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	}
	if c.Stderr != nil {
		errW, err := newPipe()
		if err != nil {
			closeAll(pipes)
			closeAll(writers)
			return Output{}, err
		}
		cmd.Stderr = errW
	}
	cmd.ExtraFiles = []*os.File{statusW}
	if proxyTheirs != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, proxyTheirs) // proxyFD
		writers = append(writers, proxyTheirs)               // closed once started
	}

	// Pdeathsig fires when the thread that started the child exits: start
	// it from a locked thread that stays alive until the child is reaped.
	started := make(chan error, 1)
	release := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			<-release
		}
		runtime.UnlockOSThread()
	}()
	err = <-started
	closeAll(writers)
	if err != nil {
		closeAll(pipes)
		if errors.Is(err, syscall.E2BIG) {
			return Output{}, fmt.Errorf("shell: start /bin/sh: the command line is too long: %w", err)
		}
		return Output{}, fmt.Errorf("%w: start the isolated shell: %w", ErrNoIsolation, err)
	}
	defer close(release)
	defer s.record(cmd.Process.Pid)()
	if c.Started != nil {
		c.Started(cmd.Process.Pid)
	}
	var refused refusals
	stopProxy := func() {}
	if proxyMine != nil {
		stop := sync.OnceFunc(serveProxy(proxyMine, s.net, refused.add))
		defer stop()
		stopProxy = stop
	}

	capt := newCapture(captureHead, captureTail)
	var mu sync.Mutex
	var copying sync.WaitGroup
	copyTo := func(r io.Reader, extra io.Writer) {
		copying.Go(func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := r.Read(buf)
				if n > 0 {
					mu.Lock()
					capt.Write(buf[:n])
					mu.Unlock()
					if extra != nil {
						extra.Write(buf[:n])
					}
				}
				if err != nil {
					return
				}
			}
		})
	}
	copyTo(pipes[1], nil)
	if c.Stderr != nil {
		copyTo(pipes[2], c.Stderr)
	}
	copied := make(chan struct{})
	go func() {
		copying.Wait()
		close(copied)
	}()

	exited := make(chan struct{})
	var waitErr error
	go func() {
		defer close(exited)
		waitErr = cmd.Wait()
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	if c.Lasting {
		timer.Stop()
	}
	var out Output
	var ctxErr error
	select {
	case <-exited:
	case <-timer.C:
		out.TimedOut = true
	case <-ctx.Done():
		ctxErr = ctx.Err()
		terminate(ctx, cmd.Process.Pid, exited)
	}
	// Killing the namespace's init kills everything in the namespace.
	cmd.Process.Kill()
	<-exited
	status, _ := io.ReadAll(pipes[0])
	pipes[0].Close()

	select {
	case <-copied:
	case <-time.After(pipeGrace):
	}
	for _, p := range pipes[1:] {
		p.Close()
	}
	<-copied

	out.Text, out.Dropped = capt.text()
	stopProxy() // the namespace is gone: nothing uses it any more
	out.Refused = refused.list()
	out.ExitCode = -1
	code, sig, setupErr, ok := parseStatus(string(status))
	switch {
	case ok && setupErr != "":
		if rest, ok := strings.CutPrefix(setupErr, ErrNoNetwork.Error()+": "); ok {
			return Output{}, fmt.Errorf("%w: %s", ErrNoNetwork, rest)
		}
		if strings.HasPrefix(setupErr, ErrNoSandbox.Error()+": ") {
			return Output{}, fmt.Errorf("%w: %s", ErrNoSandbox, strings.TrimPrefix(setupErr, ErrNoSandbox.Error()+": "))
		}
		return Output{}, fmt.Errorf("%w: %s", ErrNoIsolation, setupErr)
	case ok && sig != 0:
		out.Signal = sig.String()
	case ok:
		out.ExitCode = code
	default:
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			out.Signal = ws.Signal().String()
		}
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return out, fmt.Errorf("shell: wait: %w", waitErr)
	}
	if ctxErr != nil {
		return out, fmt.Errorf("shell: %w", ctxErr)
	}
	return out, nil
}

// terminate gives a command cut by a cause with a TermGrace (the owner's
// stop) that long after SIGTERM to its process group before the caller's
// SIGKILL; any other cut (shutdown) is killed at once.
func terminate(ctx context.Context, pid int, exited <-chan struct{}) {
	var g interface{ TermGrace() time.Duration }
	if !errors.As(context.Cause(ctx), &g) || g.TermGrace() <= 0 {
		return
	}
	syscall.Kill(-pid, syscall.SIGTERM)
	t := time.NewTimer(g.TermGrace())
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
	}
}
