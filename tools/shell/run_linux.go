package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Output capture limits: the head and the tail of an output are kept.
const (
	captureHead = 512 << 10
	captureTail = 512 << 10
)

// pipeGrace bounds how long output is still read after the process group is
// gone, for a descendant that left the group but kept the pipe open.
var pipeGrace = 2 * time.Second

// Run runs c and returns its output. A command that fails or times out is
// not an error: see Output. Errors are ErrNoSandbox (nothing ran), a failure
// to start, or the context's error when ctx ended first (the process group
// is killed and the partial output returned).
func Run(ctx context.Context, c Command) (Output, error) {
	var f facility
	if c.Sandbox != nil {
		f = probed()
	}
	return run(ctx, c, f)
}

func run(ctx context.Context, c Command, f facility) (Output, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	timeout = min(timeout, MaxTimeout)

	cmd := exec.Command("/bin/sh", "-c", c.Script)
	cmd.Dir = c.Dir
	cmd.Env = append(make([]string, 0, len(c.Env)+1), c.Env...) // never nil: nil would inherit ours
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	var box *sandbox
	if c.Sandbox != nil {
		var err error
		if box, err = prepare(*c.Sandbox, f); err != nil {
			return Output{}, err
		}
		defer box.cleanup()
		cmd.Env = setEnv(cmd.Env, "TMPDIR", box.tmp)
		box.configure(cmd)
	}

	r, w, err := os.Pipe()
	if err != nil {
		return Output{}, fmt.Errorf("shell: output pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if box != nil {
		err = box.start(cmd)
	} else {
		err = cmd.Start()
	}
	w.Close()
	if err != nil {
		r.Close()
		if errors.Is(err, ErrNoSandbox) {
			return Output{}, err
		}
		return Output{}, fmt.Errorf("shell: start /bin/sh: %w", err)
	}

	capt := newCapture(captureHead, captureTail)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		io.Copy(capt, r) // ends when every holder of the pipe is gone, or r is closed
	}()

	// Wait for the shell to exit without reaping it: the zombie keeps its pid,
	// so the process group id cannot be reused before the group is killed.
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var out Output
	var ctxErr error
	select {
	case <-exited:
	case <-timer.C:
		out.TimedOut = true
	case <-ctx.Done():
		ctxErr = ctx.Err()
	}
	unix.Kill(-pid, unix.SIGKILL) // the whole group; ESRCH when already empty
	<-exited
	waitErr := cmd.Wait()

	select {
	case <-copied:
	case <-time.After(pipeGrace):
	}
	r.Close()
	<-copied

	out.Text, out.Dropped = capt.text()
	out.ExitCode = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		out.Signal = ws.Signal().String()
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
