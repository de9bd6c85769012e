package eventstest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	n := 0
	eventstest.Eventually(t, "the third call", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("cond called %d times, want 3", n)
	}
}

// fatalRecorder records a Fatalf instead of ending the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

func TestEventuallyFailsNamingWhatItAwaited(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != any(rec) {
				panic(r)
			}
		}()
		eventstest.EventuallyWithin(rec, 30*time.Millisecond, "the moon", func() bool { return false })
	}()
	if !strings.Contains(rec.msg, "the moon") || !strings.Contains(rec.msg, "30ms") {
		t.Errorf("failure = %q, want it to name what was awaited and for how long", rec.msg)
	}
}
