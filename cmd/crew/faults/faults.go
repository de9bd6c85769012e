// Package faults is the end-to-end tests' fault injection: with -tags
// crewtest (TestMain builds crew so) and a CREW_TEST_ variable set, a crew
// serve kills itself after a chosen append or at a point of a Telegram
// send, holds its projections back, retries failed jobs sooner or writes
// heap profiles. No other build can: there Apply leaves the App's defaults.
package faults

import (
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/app"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/projections"
)

// The test build's settings, read from the environment at start.
const (
	// CrashAfterAppendEnv=N: killed once the N-th conversation event the
	// process appended is stored (eventstest.CrashAfter).
	CrashAfterAppendEnv = "CREW_TEST_CRASH_AFTER_APPEND"
	// CrashAfterTypeEnv=<event type>: killed once an event of that type
	// is stored (a stop, before it takes effect).
	CrashAfterTypeEnv = "CREW_TEST_CRASH_AFTER_TYPE"
	// CrashAtTelegramEnv=<point>: killed the first time a Telegram send
	// reaches that point (telegram.PointBeforeSend, …).
	CrashAtTelegramEnv = "CREW_TEST_TELEGRAM_CRASH"
	// JobRetryDelaysEnv=100ms,200ms,300ms: a failed one-shot job is
	// retried after those waits instead of 10 s, 30 s and 90 s.
	JobRetryDelaysEnv = "CREW_TEST_JOB_RETRY_DELAYS"
	// HoldProjectionsEnv=<file>: the projections apply nothing while the
	// file exists, so a test sees the server answer while they catch up.
	HoldProjectionsEnv = "CREW_TEST_HOLD_PROJECTIONS"
)

// The seams, nil (the App's defaults) but in the test build, whose init
// sets them (faults_crewtest.go).
var (
	conversationLog    func(loop.Appender) loop.Appender
	telegramCheckpoint func(point string)
	jobRetryDelays     []time.Duration
	heldProjections    func() []projections.Projection
)

// Apply hands the test build's seams to an App's options.
func Apply(o *app.Options) {
	o.ConversationLog, o.TelegramCheckpoint, o.JobRetryDelays = conversationLog, telegramCheckpoint, jobRetryDelays
	o.Projections = heldProjections
}
