package web

import (
	"testing"
	"time"
)

// The wait doubles from 1 s after the 5th failure and stops at 60 s.
func TestLoginWaitDoublesUpToAMinute(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	th := newThrottle()
	th.now = func() time.Time { return now }
	var waits []time.Duration
	for range 14 {
		if _, ok := th.admit("1.2.3.4"); !ok {
			t.Fatal("attempt refused after its wait")
		}
		w := max(th.m["1.2.3.4"].next.Sub(now), 0)
		if w > 0 {
			if _, ok := th.admit("1.2.3.4"); ok {
				t.Fatal("attempt admitted during the wait")
			}
		}
		waits = append(waits, w)
		now = now.Add(w)
	}
	want := []time.Duration{0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 60, 60, 60, 60}
	for i, w := range want {
		if waits[i] != w*time.Second {
			t.Errorf("wait after failure %d = %s, want %ds", i+1, waits[i], w)
		}
	}
	if _, ok := th.admit("5.6.7.8"); !ok {
		t.Error("another address is throttled too")
	}
}

// Sessions end 7 days idle or 30 days after login.
func TestSessionsExpire(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s := NewSessions()
	s.now = func() time.Time { return now }
	idle, _ := s.Create()
	busy, _ := s.Create()
	for range 6 {
		now = now.Add(24 * time.Hour)
		if !s.Valid(busy) {
			t.Fatal("busy session ended early")
		}
	}
	now = now.Add(25 * time.Hour)
	if s.Valid(idle) {
		t.Error("a session idle for more than 7 days is still valid")
	}
	for range 22 {
		if !s.Valid(busy) {
			t.Fatal("busy session ended before 30 days")
		}
		now = now.Add(24 * time.Hour)
	}
	now = now.Add(2 * 24 * time.Hour) // seen 3 days ago, but logged in 31 days ago
	if s.Valid(busy) {
		t.Error("a session older than 30 days is still valid")
	}
}
