package projections

import (
	"errors"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// FreshRuns finds a run appended a moment ago (it waits for the
// projections to apply what the log holds, nobody else waits here), with
// its conversation's title, and how it stands (RunEnded); an unknown run
// is not found, not an error, but has no end to tell.
func TestFreshRunsFindARunJustStored(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	db := openDB(t, "")
	runs := FreshRuns{Log: log, DB: db, Fresh: startRunner(t, log, db, config{})}
	s := newSeeder(t, log)
	s.conv("c1", &events.ConversationOpened{Agent: "master", Channel: "web"})
	s.conv("c1", &events.MessageReceived{Channel: "web", Text: "plan my week"})
	s.conv("c1", &events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"})
	conv, title, ok, err := runs.RunConversation(ctx, "r1")
	if err != nil || !ok || conv != "c1" || title != "plan my week" {
		t.Errorf("r1: %q %q %v %v, want c1, its title", conv, title, ok, err)
	}
	if _, _, ok, err := runs.RunConversation(ctx, "nope"); ok || err != nil {
		t.Errorf("an unknown run: found %v, err %v; want not found, no error", ok, err)
	}
	if status, _, steps, err := runs.RunEnded(ctx, "r1"); status != RunRunning || steps != 0 || err != nil {
		t.Errorf("r1 started: %q after %d steps, %v; want running after 0", status, steps, err)
	}
	s.conv("c1", &events.ModelCalled{RunID: "r1", Step: 1, Route: "a", Model: "m"})
	s.conv("c1", &events.ModelCalled{RunID: "r1", Step: 2, Route: "a", Model: "m"})
	s.conv("c1", &events.RunFinished{RunID: "r1", Status: events.RunHalted, Reason: "max_steps"})
	if status, reason, steps, err := runs.RunEnded(ctx, "r1"); status != events.RunHalted || reason != "max_steps" || steps != 2 || err != nil {
		t.Errorf("r1 ended: %q (%q) after %d steps, %v; want halted (max_steps) after 2, read at once", status, reason, steps, err)
	}
	if _, _, _, err := runs.RunEnded(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown run's end: %v, want ErrNotFound", err)
	}
}
