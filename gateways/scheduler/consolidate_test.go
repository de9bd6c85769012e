package scheduler

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/my-agent-crew/crew/events"
)

// A consolidate job (schedules: consolidate: true) runs RunConsolidate for
// its agent, opens no conversation, and records the answer as the job's
// output.
func TestConsolidateJob(t *testing.T) {
	h := newHarness(t, ny(2026, 11, 30, 10, 0))
	var mu sync.Mutex
	var asked []string
	run := func(ctx context.Context, agent string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, agent)
		if agent == "broken" {
			return "", errors.New("every model route failed")
		}
		return "proposal p1: add_only, applied", nil
	}
	s := h.start(Config{RunConsolidate: run, Jobs: []Job{
		{ID: "pong-weekly", Agent: "pong", Cron: "0 18 * * 0", Consolidate: true},
		{ID: "broken-weekly", Agent: "broken", Cron: "0 18 * * 0", Consolidate: true},
	}})

	if err := s.RunNow(t.Context(), "pong-weekly"); err != nil {
		t.Fatal(err)
	}
	if f := find[*events.JobFired](h.job("pong-weekly")); f == nil || f.Conversation != "" || f.Agent != "pong" {
		t.Errorf("JobFired = %+v, want no conversation", f)
	}
	if c := find[*events.JobCompleted](h.job("pong-weekly")); c == nil || c.Status != events.JobOK || c.Output != "proposal p1: add_only, applied" {
		t.Errorf("JobCompleted = %+v", c)
	}
	if n := len(h.conv("job-pong-weekly-202611301000")); n != 0 || h.kicked("job-pong-weekly-202611301000") {
		t.Errorf("a consolidate job opened a conversation (%d events)", n)
	}

	if err := s.RunNow(t.Context(), "broken-weekly"); err != nil {
		t.Fatal(err)
	}
	if c := find[*events.JobCompleted](h.job("broken-weekly")); c == nil || c.Status != events.JobFailed || c.Error != "every model route failed" {
		t.Errorf("broken JobCompleted = %+v", c)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 || asked[0] != "pong" || asked[1] != "broken" {
		t.Errorf("RunConsolidate asked for %v", asked)
	}

	for _, bad := range []Job{
		{ID: "both", Agent: "pong", Cron: "0 18 * * 0", Consolidate: true, Prompt: "and talk"},
		{ID: "script-too", Agent: "pong", Cron: "0 18 * * 0", Consolidate: true, Script: "true"},
	} {
		if err := s.Add(t.Context(), bad); !errors.Is(err, ErrInvalidJob) {
			t.Errorf("Add(%s) = %v, want ErrInvalidJob", bad.ID, err)
		}
	}
}

// A consolidate firing cut by a restart is completed as failed at the
// next start, not run again and not turned into a turn.
func TestConsolidateJobInterruptedByRestart(t *testing.T) {
	h := newHarness(t, ny(2026, 11, 30, 10, 0))
	fired := events.MustNew(&events.JobFired{Agent: "pong", Due: ny(2026, 11, 30, 10, 0).UTC(), Manual: true, Origin: events.OriginProfile})
	if _, err := h.log.Append(t.Context(), events.Job("pong-weekly"), 0, fired); err != nil {
		t.Fatal(err)
	}
	called := false
	h.start(Config{
		RunConsolidate: func(context.Context, string) (string, error) { called = true; return "", nil },
		Jobs:           []Job{{ID: "pong-weekly", Agent: "pong", Cron: "0 18 * * 0", Consolidate: true}},
	})
	c := find[*events.JobCompleted](h.job("pong-weekly"))
	if c == nil || c.Status != events.JobFailed || c.Error == "" {
		t.Fatalf("JobCompleted after restart = %+v, want failed", c)
	}
	if called || len(h.conv("job-pong-weekly-202611301000")) != 0 {
		t.Errorf("the interrupted firing ran again (called %v) or opened a conversation", called)
	}
}
