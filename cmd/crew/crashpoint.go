package main

import (
	"time"

	"github.com/my-agent-crew/crew/loop"
)

// conversationLog is what the conversations' writers append through: the
// log itself. The fault-injection build (tag crewtest) wraps it to kill
// the process after a chosen append; no other build can.
var conversationLog = func(a loop.Appender) loop.Appender { return a }

// crashAfterAppendEnv names the fault-injection setting of the test build.
const (
	crashAfterAppendEnv = "CREW_TEST_CRASH_AFTER_APPEND"
	crashAfterTypeEnv   = "CREW_TEST_CRASH_AFTER_TYPE"
)

// telegramCheckpoint is the Telegram gateway's fault-injection hook
// (telegram.Config.Checkpoint): nil in every build but the crewtest one.
var telegramCheckpoint func(point string)

// jobRetryDelays are the scheduler's waits before a failed one-shot fires
// again: nil (10 s, 30 s, 90 s) in every build but the crewtest one, where
// CREW_TEST_JOB_RETRY_DELAYS (comma-separated durations) shortens them.
var jobRetryDelays []time.Duration

const jobRetryDelaysEnv = "CREW_TEST_JOB_RETRY_DELAYS"

// crashAtTelegramEnv names the point of a Telegram send the test build
// kills itself at (telegram.PointBeforeSend, …).
const crashAtTelegramEnv = "CREW_TEST_TELEGRAM_CRASH"
