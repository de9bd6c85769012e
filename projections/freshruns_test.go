package projections

import (
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// FreshRuns finds a run appended a moment ago (it waits for the
// projections to apply what the log holds, nobody else waits here), with
// its conversation's title; an unknown run is not found, not an error.
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
}
