package eventstest

import (
	"testing"
	"time"
)

// Wait is how long Eventually waits: far longer than anything takes on a
// loaded machine, so that reaching it means "never".
const Wait = 30 * time.Second

// pollEvery is short: a condition that holds is seen at once.
const pollEvery = 10 * time.Millisecond

// Eventually polls cond until it holds and fails t, naming what it waited
// for, if it does not within Wait. Tests wait with it instead of sleeping.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyWithin(t, Wait, what, cond)
}

// EventuallyWithin is Eventually with its own deadline, for waits that are
// long by design (an approval expiring, a cold start).
func EventuallyWithin(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s waiting for %s", d, what)
		}
		time.Sleep(pollEvery)
	}
}
