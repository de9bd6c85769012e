package eventstest_test

import (
	"testing"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// The real log on an embedded server and the fake hold the same contract.
func TestEventsLogConforms(t *testing.T) {
	eventstest.TestLog(t, func(t *testing.T) eventstest.Log {
		_, log := eventstest.Start(t)
		return log
	})
}

func TestMemLogConforms(t *testing.T) {
	eventstest.TestLog(t, func(t *testing.T) eventstest.Log { return eventstest.NewMemLog(nil) })
}
