package scheduler

import (
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
)

// R-HOME-4: agent.yaml schedules change without a restart — a new one
// fires, a removed one does not, a changed one fires at its new time.
func TestSetProfileReschedulesWithoutRestart(t *testing.T) {
	h := newHarness(t, ny(2026, 11, 30, 8, 0))
	s := h.start(Config{Jobs: []Job{
		{ID: "old", Agent: "coach", Name: "old", Cron: "30 8 * * *", Prompt: "old"},
		{ID: "moved", Agent: "coach", Name: "moved", Cron: "30 8 * * *", Prompt: "moved"},
	}})
	h.timers(2)
	if err := s.SetProfile(t.Context(), []Job{
		{ID: "moved", Agent: "coach", Name: "moved", Cron: "45 8 * * *", Prompt: "moved"},
		{ID: "new", Agent: "coach", Name: "new", Cron: "30 8 * * *", Prompt: "new"},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetProfile(t.Context(), []Job{{ID: "bad", Agent: "coach", Cron: "nope", Prompt: "x"}}); err == nil {
		t.Error("an invalid cron was accepted")
	}
	h.timers(2)
	h.clock.Advance(30 * time.Minute) // 08:30
	eventstest.Eventually(t, "the new job's turn", func() bool { return h.kicked("job-new-202611300830") })
	h.clock.Advance(15 * time.Minute) // 08:45
	eventstest.Eventually(t, "the moved job's turn", func() bool { return h.kicked("job-moved-202611300845") })
	if h.kicked("job-old-202611300830") || h.kicked("job-moved-202611300830") {
		t.Error("a removed or moved schedule fired at its old time")
	}
}
