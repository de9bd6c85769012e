//go:build crewtest

package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
)

// The fault-injection point of the end-to-end tests, compiled only into
// the test build (TestMain builds with -tags crewtest): with
// CREW_TEST_CRASH_AFTER_APPEND=N the process kills itself as soon as the
// N-th conversation event it appended is stored (eventstest.CrashAfter).
func init() {
	if n, err := strconv.Atoi(os.Getenv(crashAfterAppendEnv)); err == nil && n > 0 {
		conversationLog = func(a loop.Appender) loop.Appender { return eventstest.CrashAfter(a, n) }
	}
	// CREW_TEST_CRASH_AFTER_TYPE=<event type>: killed once an event of
	// that type is stored (a stop, before it takes effect).
	if typ := os.Getenv(crashAfterTypeEnv); typ != "" {
		conversationLog = func(a loop.Appender) loop.Appender { return eventstest.CrashAfterType(a, typ) }
	}
}

// With CREW_TEST_TELEGRAM_CRASH=<point> the process kills itself the
// first time a Telegram send reaches that point (before_send, after_send:
// Telegram accepted it, telegram_sent not stored; after_sent).
func init() {
	if point := os.Getenv(crashAtTelegramEnv); point != "" {
		telegramCheckpoint = func(p string) {
			if p == point {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			}
		}
	}
}

// With CREW_TEST_JOB_RETRY_DELAYS=100ms,200ms,300ms a failed one-shot job
// is retried after those waits instead of 10 s, 30 s and 90 s.
func init() {
	v := os.Getenv(jobRetryDelaysEnv)
	if v == "" {
		return
	}
	for item := range strings.SplitSeq(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(item))
		if err != nil || d <= 0 {
			panic(jobRetryDelaysEnv + ": " + item + ": want durations such as 100ms")
		}
		jobRetryDelays = append(jobRetryDelays, d)
	}
}
