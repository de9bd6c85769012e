package loop

import (
	"context"
	"time"

	"github.com/nats-io/nuid"
)

// Clock is what a turn reads that differs from one run to the next: the
// time, the owner's time zone, fresh ids and the waits between a model's
// retries. A served crew reads the wall (WallClock); a replay pins all of
// it to the recording, so the loop decides the same; a test fixes the
// time and makes the waits instant.
type Clock interface {
	// Now is the time.
	Now() time.Time
	// Location is where the owner lives (config.yaml timezone): dates in
	// the system prompt and the tools; nil is UTC.
	Location() *time.Location
	// NewID is a fresh id for a run, an approval, a question or a task.
	NewID() string
	// Sleep waits d, or until ctx ends (ctx.Err()).
	Sleep(ctx context.Context, d time.Duration) error
}

// WallClock is the real clock in the owner's Zone (nil: UTC), with NATS
// unique ids.
type WallClock struct{ Zone *time.Location }

// Now is time.Now.
func (WallClock) Now() time.Time { return time.Now() }

// Location is c.Zone.
func (c WallClock) Location() *time.Location { return c.Zone }

// NewID is a NATS unique id.
func (WallClock) NewID() string { return nuid.Next() }

// Sleep waits d on a timer, or until ctx ends.
func (WallClock) Sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
