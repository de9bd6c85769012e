package web

import (
	"strconv"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// The wait doubles from 1 s after the 5th failure and stops at 60 s; during
// a wait only spareCompares more tokens are compared, then none, the right
// one included; failures are forgotten an hour after the last.
func TestLoginWaitDoublesUpToAMinute(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	th := newThrottle()
	th.now = func() time.Time { return now }
	compared := 0
	wrong := func() bool { compared++; return false }
	var waits []time.Duration
	for range 14 {
		if ok, _ := th.check("1.2.3.4", wrong); ok {
			t.Fatal("a wrong token let in")
		}
		w := max(th.m["1.2.3.4"].next.Sub(now), 0)
		if w > 0 {
			before := compared
			for range spareCompares + 2 {
				th.check("1.2.3.4", wrong)
			}
			if compared-before != spareCompares {
				t.Fatalf("during a wait %d tokens compared, want %d", compared-before, spareCompares)
			}
			if ok, _ := th.check("1.2.3.4", func() bool { return true }); ok {
				t.Fatal("the right token compared after the wait's spare comparisons were spent")
			}
		}
		waits = append(waits, w)
		now = now.Add(w)
	}
	want := []time.Duration{0, 0, 0, 0, 1, 16, 60, 60, 60, 60, 60, 60, 60, 60}
	for i, w := range want {
		if waits[i] != w*time.Second {
			t.Errorf("wait after failure round %d = %s, want %ds", i+1, waits[i], w)
		}
	}
	if ok, _ := th.check("5.6.7.8", func() bool { return true }); !ok {
		t.Error("another address is throttled too")
	}
	now = now.Add(forgetAfter + time.Minute)
	th.check("1.2.3.4", wrong)
	if th.m["1.2.3.4"].fails != 1 {
		t.Errorf("failures an hour old not forgotten: %d", th.m["1.2.3.4"].fails)
	}
}

// Sessions end 7 days idle or 30 days after login, in memory and in the
// cluster's bucket alike.
func TestSessionsExpire(t *testing.T) {
	srv, _ := eventstest.Start(t)
	b, err := events.OpenBucket(t.Context(), srv.Conn(), events.SessionBucket, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*Sessions{"memory": NewSessions(), "bucket": SharedSessions(b)} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			now := time.Now()
			s.now = func() time.Time { return now }
			idle, _ := s.Create(ctx)
			busy, _ := s.Create(ctx)
			for range 6 {
				now = now.Add(24 * time.Hour)
				if !s.Valid(ctx, busy) {
					t.Fatal("busy session ended early")
				}
			}
			now = now.Add(25 * time.Hour)
			if s.Valid(ctx, idle) {
				t.Error("a session idle for more than 7 days is still valid")
			}
			for range 22 {
				if !s.Valid(ctx, busy) {
					t.Fatal("busy session ended before 30 days")
				}
				now = now.Add(24 * time.Hour)
			}
			now = now.Add(2 * 24 * time.Hour) // seen 3 days ago, but logged in 31 days ago
			if s.Valid(ctx, busy) {
				t.Error("a session older than 30 days is still valid")
			}
		})
	}
}

// The login throttle remembers at most maxThrottled addresses: after
// maxThrottled+1 failing addresses it holds maxThrottled, the oldest
// failure let go first, the newest kept.
func TestLoginThrottleStaysAtItsBound(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	th := newThrottle()
	th.now = func() time.Time { return now }
	addr := func(i int) string {
		return "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
	}
	for i := range maxThrottled + 1 {
		th.check(addr(i), func() bool { return false })
		now = now.Add(time.Millisecond)
	}
	if got := len(th.m); got != maxThrottled {
		t.Fatalf("%d addresses remembered after %d, want %d", got, maxThrottled+1, maxThrottled)
	}
	if th.m[addr(0)] != nil || th.m[addr(maxThrottled)] == nil {
		t.Error("not the oldest address let go for the newest")
	}
}
