package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools/schedule"
)

// TestSlotWithoutSchedulerOrClusterSaysSo: a process that runs no
// scheduler and shares no cluster refuses plainly, changing nothing.
func TestSlotWithoutSchedulerOrClusterSaysSo(t *testing.T) {
	s := NewSlot(nil, Config{})
	err := s.Add(context.Background(), Job{ID: "j1"})
	if err == nil || err.Error() != "scheduler: not running" {
		t.Fatalf("Add = %v, want scheduler: not running", err)
	}
	if err := s.SetProfile(context.Background(), nil); err != nil {
		t.Errorf("SetProfile on a standby = %v, want nil (read when it leads)", err)
	}
}

// TestSlotReplyKeepsTheErrorKind: the leader's refusal reaches a standby
// in its words and of its kind (schedule_create's refusals, the API's
// statuses map by kind).
func TestSlotReplyKeepsTheErrorKind(t *testing.T) {
	for _, kind := range []error{ErrUnknownJob, ErrJobExists, ErrCancelled, ErrProfileJob, ErrInvalidJob} {
		sent := fmt.Errorf("job j1: %w", kind)
		got := replyOf(sent).err()
		if !errors.Is(got, kind) || got.Error() != sent.Error() {
			t.Errorf("%v came back as %v", sent, got)
		}
	}
	if replyOf(nil).err() != nil {
		t.Error("no error came back as one")
	}
	if got := replyOf(errors.New("disk full")).err(); got == nil || got.Error() != "disk full" {
		t.Errorf("an error of no kind came back as %v", got)
	}
}

// TestAdderRefusesTheJobNotTheHarness: schedule_create tells the model
// of a job the scheduler refuses for what it is (a bad cron, an id
// taken), and reports any other failure as the harness's; the slot's
// Start runs its scheduler here and stop takes it away again.
func TestAdderRefusesTheJobNotTheHarness(t *testing.T) {
	h := newHarness(t, ny(2026, 11, 30, 10, 2))
	slot := NewSlot(nil, h.config(Config{}))
	add := slot.Adder()
	job := schedule.Job{ID: "water", Agent: "coach", Name: "water", Cron: "*/5 * * * *", Prompt: "drink"}
	if err := add.Add(t.Context(), job); err == nil || errors.Is(err, schedule.ErrNotScheduled) {
		t.Fatalf("Add with no scheduler = %v, want the harness's error, not a refusal", err)
	}
	stop, err := slot.Start(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		stop()
		if err := add.Add(t.Context(), schedule.Job{ID: "later", Agent: "coach", Cron: "*/5 * * * *", Prompt: "x"}); err == nil || err.Error() != "scheduler: not running" {
			t.Errorf("Add after stop = %v, want scheduler: not running", err)
		}
	}()
	if err := add.Add(t.Context(), job); err != nil {
		t.Fatalf("Add = %v", err)
	}
	if got := find[*events.JobScheduled](h.job("water")); got == nil || got.Prompt != "drink" || got.Cron != job.Cron {
		t.Errorf("stored %+v, want the job", got)
	}
	for _, bad := range []schedule.Job{job, {ID: "bad", Agent: "coach", Cron: "not cron", Prompt: "x"}} {
		err := add.Add(t.Context(), bad)
		if !errors.Is(err, schedule.ErrNotScheduled) {
			t.Errorf("Add(%s) = %v, want a refusal (schedule.ErrNotScheduled)", bad.ID, err)
		}
	}
}
