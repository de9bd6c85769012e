package events

import (
	"errors"
	"fmt"
)

var (
	// ErrConflict means the scope's last sequence was not the one the writer
	// expected: someone else appended first. Re-read and decide again.
	ErrConflict = errors.New("events: conflict: scope changed since last read")
	// ErrTooLarge means an event, encoded, is over what the log takes in
	// one message (the NATS connection's max payload): nothing was stored.
	ErrTooLarge = errors.New("events: event too large for the log")
	// ErrUnknownType means an event's type is not registered in this build.
	ErrUnknownType = errors.New("unknown event type")
	// ErrNewerVersion means an event was written by a newer build.
	ErrNewerVersion = errors.New("event version newer than this build understands")
	// ErrInvalidID means an id cannot be used as a subject token.
	ErrInvalidID = errors.New("invalid id")
)

// DecodeError says which stored event could not be decoded.
type DecodeError struct {
	Subject string
	Seq     uint64
	Err     error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("decode event %s seq %d: %v", e.Subject, e.Seq, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// ConflictError carries what the writer expected and the scope it wrote to.
// errors.Is(err, ErrConflict) holds.
type ConflictError struct {
	Subject  string
	Expected uint64
	Err      error // the server's answer
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("append %s: expected last sequence %d: %v", e.Subject, e.Expected, ErrConflict)
}

func (e *ConflictError) Unwrap() []error { return []error{ErrConflict, e.Err} }
