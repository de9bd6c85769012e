package loop_test

import (
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
)

// The in-memory log a replay runs on is a loop Appender; eventstest.TestLog
// holds it to events.Log's semantics.
var _ loop.Appender = (*eventstest.MemLog)(nil)
