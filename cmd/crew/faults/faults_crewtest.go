//go:build crewtest

package faults

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
)

func init() {
	eventstest.HeapProfiles(os.Getenv(eventstest.HeapProfileEnv)) // CREW_BENCH_HEAPPROFILE=<file>
	if n, err := strconv.Atoi(os.Getenv(CrashAfterAppendEnv)); err == nil && n > 0 {
		conversationLog = func(a loop.Appender) loop.Appender { return eventstest.CrashAfter(a, n) }
	}
	if typ := os.Getenv(CrashAfterTypeEnv); typ != "" {
		conversationLog = func(a loop.Appender) loop.Appender { return eventstest.CrashAfterType(a, typ) }
	}
	if point := os.Getenv(CrashAtTelegramEnv); point != "" {
		telegramCheckpoint = func(p string) {
			if p == point {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			}
		}
	}
	if v := os.Getenv(JobRetryDelaysEnv); v != "" {
		for item := range strings.SplitSeq(v, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(item))
			if err != nil || d <= 0 {
				panic(JobRetryDelaysEnv + ": " + item + ": want durations such as 100ms")
			}
			jobRetryDelays = append(jobRetryDelays, d)
		}
	}
	if file := os.Getenv(HoldProjectionsEnv); file != "" {
		heldProjections = func() []projections.Projection {
			var out []projections.Projection
			for _, p := range projections.All() {
				out = append(out, held{p, file})
			}
			return out
		}
	}
}

// held is a projection that applies nothing while its file exists.
type held struct {
	projections.Projection
	file string
}

func (h held) Apply(tx *projections.Tx, env events.Envelope) error {
	for {
		if _, err := os.Stat(h.file); errors.Is(err, os.ErrNotExist) {
			return h.Projection.Apply(tx, env)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Version is the held projection's, so holding changes nothing stored.
func (h held) Version() int {
	if v, ok := h.Projection.(projections.Versioned); ok {
		return v.Version()
	}
	return 1
}
