package main

import "github.com/my-agent-crew/crew/loop"

// conversationLog is what the conversations' writers append through: the
// log itself. The fault-injection build (tag crewtest) wraps it to kill
// the process after a chosen append; no other build can.
var conversationLog = func(a loop.Appender) loop.Appender { return a }

// crashAfterAppendEnv names the fault-injection setting of the test build.
const (
	crashAfterAppendEnv = "CREW_TEST_CRASH_AFTER_APPEND"
	crashAfterTypeEnv   = "CREW_TEST_CRASH_AFTER_TYPE"
)
