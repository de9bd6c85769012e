package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestSlotWithoutSchedulerOrClusterSaysSo: a process that runs no
// scheduler and shares no cluster refuses plainly, changing nothing.
func TestSlotWithoutSchedulerOrClusterSaysSo(t *testing.T) {
	s := NewSlot(nil)
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
