package events

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
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
	// ErrStoreFull means the store refused an append for want of room
	// (the stream's limits, the disk): nothing of it was stored.
	ErrStoreFull = errors.New("events: the event store is full")
	// ErrStoreUnavailable means the store did not take an append in time
	// (no answer, JetStream down or over its request limit), having asked
	// again for a while: it was not acknowledged.
	ErrStoreUnavailable = errors.New("events: the event store did not answer in time")
)

// StoreError is an append the store refused or did not answer:
// errors.Is(err, ErrStoreFull) or errors.Is(err, ErrStoreUnavailable)
// holds, and the server's own answer is kept.
type StoreError struct {
	Kind error // ErrStoreFull or ErrStoreUnavailable
	Err  error
}

func (e *StoreError) Error() string { return e.Err.Error() + " (" + e.Kind.Error() + ")" }

func (e *StoreError) Unwrap() []error { return []error{e.Kind, e.Err} }

// storeError marks an append's error as the store's refusal for room or
// its silence, so the doors can answer 503 with Retry-After rather than a
// failure the sender cannot tell from a loss. A conflict, a bad event or
// the caller's own cancellation stay as they are.
func storeError(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil || errors.Is(err, ErrConflict) {
		return err
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jsStoreFailed:
			if d := strings.ToLower(apiErr.Description); strings.Contains(d, "exceeded") || strings.Contains(d, "resources") {
				return &StoreError{Kind: ErrStoreFull, Err: err}
			}
		case jsStorageResourcesExceeded, jsInsufficientResources, jsMemoryResourcesExceeded:
			return &StoreError{Kind: ErrStoreFull, Err: err}
		case jsClusterNotAvailable, jsNotEnabled, jsTooManyRequests, jsLastSeqNotReady:
			return &StoreError{Kind: ErrStoreUnavailable, Err: err}
		}
		return err
	}
	if noLeader(err) {
		return &StoreError{Kind: ErrStoreUnavailable, Err: err}
	}
	return err
}

// The server's error codes storeError sorts (errors.json of nats-server).
const (
	jsStoreFailed              = 10077 // "maximum messages exceeded", "maximum bytes exceeded", …
	jsStorageResourcesExceeded = 10047
	jsInsufficientResources    = 10023
	jsMemoryResourcesExceeded  = 10028
	jsNotEnabled               = 10076
	jsTooManyRequests          = 10167
	jsLastSeqNotReady          = 10163
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
