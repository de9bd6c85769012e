package kit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// pipeGrace bounds how long output is still read after the process group is
// gone, for a descendant that left the group but kept a pipe open.
const pipeGrace = 2 * time.Second

// captureBytes bounds what is kept of a hook's output before it is cut to
// maxHookOutput characters, so a chatty hook cannot exhaust memory.
const captureBytes = 64 << 10

// runHook runs one hook command and reports how it ended, and its stderr.
func runHook(ctx context.Context, hk hook, stdin []byte, dir string, env []string) (Outcome, string) {
	start := time.Now()
	o := Outcome{Command: hk.command}

	cmd := exec.Command("/bin/sh", "-c", hk.command)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(stdin)
	var all, stderr capped
	var mu sync.Mutex // stdout and stderr are copied by two goroutines
	cmd.Stdout = lockedWriter{&mu, &all}
	cmd.Stderr = lockedWriter{&mu, io.MultiWriter(&all, &stderr)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = pipeGrace
	if err := cmd.Start(); err != nil {
		o.ExitCode = -1
		o.Output = fmt.Sprintf("the hook could not start: %v", err)
		o.Duration = time.Since(start)
		return o, ""
	}

	// Wait for the shell to exit without reaping it: the zombie keeps its
	// pid, so the process group id cannot be reused before the group is
	// killed.
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
	}()

	timer := time.NewTimer(hk.timeout)
	defer timer.Stop()
	var cancelled error
	select {
	case <-exited:
	case <-timer.C:
		o.TimedOut = true
	case <-ctx.Done():
		cancelled = ctx.Err()
	}
	// The whole group, also after a normal exit, so nothing a hook left
	// running in the background outlives it.
	unix.Kill(-pid, unix.SIGKILL)
	<-exited
	cmd.Wait() // the exit status is read from ProcessState below

	o.Duration = time.Since(start)
	o.ExitCode = cmd.ProcessState.ExitCode()
	mu.Lock()
	defer mu.Unlock()
	o.Output = cutOutput(all.String())
	switch {
	case o.TimedOut:
		o.ExitCode = -1
		o.Output += fmt.Sprintf("\n[killed: the hook ran past its timeout of %v]", hk.timeout)
	case cancelled != nil:
		o.ExitCode = -1
		o.Output += fmt.Sprintf("\n[killed: %v]", cancelled)
	}
	return o, stderr.String()
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// capped keeps the first captureBytes written to it and drops the rest.
type capped struct {
	buf     bytes.Buffer
	dropped bool
}

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	if room := captureBytes - c.buf.Len(); room < len(p) {
		c.dropped = true
		p = p[:max(room, 0)]
	}
	c.buf.Write(p)
	return n, nil
}

func (c *capped) String() string {
	if c.dropped {
		return c.buf.String() + "\n[… more output dropped]"
	}
	return c.buf.String()
}
