package loop

import (
	"context"
	"errors"
	"iter"

	"github.com/my-agent-crew/crew/events"
)

// ErrReadOnly: a read-only crew (crew replay, doctor's checks) was asked
// for a conversation; it opens no log.
var ErrReadOnly = errors.New("a read-only crew (replay, doctor) opens no conversation log: its conversations cannot be read or written")

// ReadOnlyLog is a read-only crew's conversation log: none. Every read
// and write is ErrReadOnly; it redacts with Secrets, the home's (replay
// brings its own in-memory log).
type ReadOnlyLog struct{ Secrets *events.Redactor }

var _ Appender = ReadOnlyLog{}

func (l ReadOnlyLog) Read(context.Context, string, uint64) iter.Seq2[events.Envelope, error] {
	return func(yield func(events.Envelope, error) bool) { yield(events.Envelope{}, ErrReadOnly) }
}
func (l ReadOnlyLog) Last(context.Context, string) (uint64, error) { return 0, ErrReadOnly }
func (l ReadOnlyLog) Append(context.Context, events.Scope, uint64, ...events.Envelope) ([]events.Envelope, error) {
	return nil, ErrReadOnly
}
func (l ReadOnlyLog) Redactor() *events.Redactor { return l.Secrets }
func (l ReadOnlyLog) Sync(context.Context) error { return nil }
