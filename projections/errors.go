package projections

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound means no view exists under the id asked for.
	ErrNotFound = errors.New("projections: not found")
	// ErrStopped means a projection stopped on an event it could not apply;
	// Runner.Status says which.
	ErrStopped = errors.New("projections: projection stopped")
	// ErrClosed means the Runner was closed.
	ErrClosed = errors.New("projections: runner closed")
)

// ApplyError says which stored event a projection failed to apply.
type ApplyError struct {
	Projection string
	Subject    string
	Seq        uint64
	Err        error
}

func (e *ApplyError) Error() string {
	return fmt.Sprintf("projection %s: apply %s seq %d: %v", e.Projection, e.Subject, e.Seq, e.Err)
}

func (e *ApplyError) Unwrap() error { return e.Err }
