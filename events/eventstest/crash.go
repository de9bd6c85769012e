package eventstest

import (
	"context"
	"os"
	"sync"
	"syscall"

	"github.com/my-agent-crew/crew/events"
)

// CrashAfter is log, except that the process kills itself (SIGKILL) as soon
// as the n-th event appended through it is acknowledged by the store,
// before anything acts on it: the fault-injection point of the end-to-end
// crash tests (cmd/crew's test build). Events of one append are counted one
// by one, as the store takes them one by one.
func CrashAfter(log Log, n int) Log { return &crashingLog{Log: log, left: n} }

type crashingLog struct {
	Log
	mu   sync.Mutex
	left int
}

func (l *crashingLog) Append(ctx context.Context, scope events.Scope, expect uint64, envs ...events.Envelope) ([]events.Envelope, error) {
	l.mu.Lock() // held to the end: nothing else is appended once the count is reached
	defer l.mu.Unlock()
	if l.left > len(envs) {
		l.left -= len(envs)
		return l.Log.Append(ctx, scope, expect, envs...)
	}
	stored, err := l.Log.Append(ctx, scope, expect, envs[:l.left]...)
	if err == nil && len(stored) == l.left {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	l.left -= len(stored)
	return stored, err
}

// CrashAfterType is log, except that the process kills itself (SIGKILL) as
// soon as an append holding an event of type typ is acknowledged by the
// store: a crash right after that decision was stored (cmd/crew's test
// build, CREW_TEST_CRASH_AFTER_TYPE).
func CrashAfterType(log Log, typ string) Log { return &crashingTypeLog{Log: log, typ: typ} }

type crashingTypeLog struct {
	Log
	mu  sync.Mutex
	typ string
}

func (l *crashingTypeLog) Append(ctx context.Context, scope events.Scope, expect uint64, envs ...events.Envelope) ([]events.Envelope, error) {
	l.mu.Lock() // held to the end: nothing else is appended once it is stored
	defer l.mu.Unlock()
	stored, err := l.Log.Append(ctx, scope, expect, envs...)
	for _, env := range stored {
		if err == nil && env.Type == l.typ {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
	return stored, err
}
