//go:build crewtest

package main

import (
	"context"
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
)

// The fault-injection point of the end-to-end tests, compiled only into
// the test build (TestMain builds with -tags crewtest): with
// CREW_TEST_CRASH_AFTER_APPEND=N
// the process kills itself (SIGKILL) as soon as the N-th conversation
// event it appended is acknowledged by the store, before anything acts on
// it. Events of one append are counted one by one, as the store takes
// them one by one.
func init() {
	n, err := strconv.Atoi(os.Getenv(crashAfterAppendEnv))
	if err != nil || n <= 0 {
		return
	}
	conversationLog = func(a loop.Appender) loop.Appender { return &crashingLog{Appender: a, left: n} }
}

type crashingLog struct {
	loop.Appender
	mu   sync.Mutex
	left int
}

func (l *crashingLog) Append(ctx context.Context, scope events.Scope, expect uint64, envs ...events.Envelope) ([]events.Envelope, error) {
	l.mu.Lock() // held to the end: nothing else is appended once the count is reached
	defer l.mu.Unlock()
	if l.left > len(envs) {
		l.left -= len(envs)
		return l.Appender.Append(ctx, scope, expect, envs...)
	}
	stored, err := l.Appender.Append(ctx, scope, expect, envs[:l.left]...)
	if err == nil && len(stored) == l.left {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	l.left -= len(stored)
	return stored, err
}
