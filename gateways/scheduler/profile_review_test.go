package scheduler

import (
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// A profile schedule removed from agent.yaml while its firing's turn is
// still running: the firing is still completed when the run finishes, not
// left open for ever.
func TestSetProfileRemovedJobStillCompletesOpenFiring(t *testing.T) {
	h := newHarness(t, ny(2026, 11, 30, 8, 0))
	s := h.start(Config{Jobs: []Job{{ID: "daily", Agent: "coach", Name: "daily", Cron: "30 8 * * *", Prompt: "plan"}}})
	if err := s.RunNow(t.Context(), "daily"); err != nil {
		t.Fatal(err)
	}
	conv := "job-daily-202611300800"
	eventstest.Eventually(t, "the firing's turn", func() bool { return h.kicked(conv) })
	if err := s.SetProfile(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	h.finishRun(conv, events.RunDone)
	eventstest.Eventually(t, "the firing completed", func() bool {
		c := find[*events.JobCompleted](h.job("daily"))
		return c != nil && c.Status == events.JobOK
	})
}

// Removed and put back while its firing's turn runs: the firing completes,
// and the job fires again afterwards (its expected sequence is right).
func TestSetProfileRemovedAndBackWhileFiring(t *testing.T) {
	h := newHarness(t, ny(2026, 11, 30, 8, 0))
	job := Job{ID: "daily", Agent: "coach", Name: "daily", Cron: "30 8 * * *", Prompt: "plan"}
	s := h.start(Config{Jobs: []Job{job}})
	if err := s.RunNow(t.Context(), "daily"); err != nil {
		t.Fatal(err)
	}
	conv := "job-daily-202611300800"
	eventstest.Eventually(t, "the firing's turn", func() bool { return h.kicked(conv) })
	if err := s.SetProfile(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.SetProfile(t.Context(), []Job{job}); err != nil {
		t.Fatal(err)
	}
	h.finishRun(conv, events.RunDone)
	eventstest.Eventually(t, "the firing completed", func() bool { return count[*events.JobCompleted](h.job("daily")) == 1 })
	h.clock.Advance(time.Minute)
	if err := s.RunNow(t.Context(), "daily"); err != nil {
		t.Fatalf("firing after the job came back: %v", err)
	}
	if n := count[*events.JobFired](h.job("daily")); n != 2 {
		t.Errorf("%d firings, want 2", n)
	}
}
