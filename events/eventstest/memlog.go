package eventstest

import (
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/memlog"
)

// MemLog is memlog.MemLog, the in-memory log (a production package, so
// that replay does not link this one).
type MemLog = memlog.MemLog

// NewMemLog is memlog.New.
func NewMemLog(envs []events.Envelope) *MemLog { return memlog.New(envs) }

// Matches is memlog.Matches.
func Matches(filter, subject string) bool { return memlog.Matches(filter, subject) }
