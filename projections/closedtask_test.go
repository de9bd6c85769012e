package projections

import (
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// A background task's end stored after its conversation was closed (a task
// may outlive the owner's /new or the day's end) ends the task and changes
// nothing else: the conversation stays closed with nothing queued, is not
// recoverable, and the chat tells the end in its history, never queued.
func TestTaskEndInAClosedConversationQueuesNothing(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	db := openDB(t, "")
	r := startRunner(t, log, db, config{})
	s := newSeeder(t, log)
	s.conv("c1", &events.MessageReceived{Channel: "web", Text: "build"})
	s.conv("c1", &events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"})
	s.conv("c1", &events.TaskStarted{TaskID: "bg-1", CallID: "t1", FromRun: "r1", Command: "make"})
	s.conv("c1", &events.RunFinished{RunID: "r1", Status: events.RunDone})
	s.conv("c1", &events.ConversationClosed{Reason: "owner"})
	last := s.conv("c1", &events.TaskNotification{TaskID: "bg-1", CallID: "t1", FromRun: "r1", Command: "make", ExitCode: 3, Output: "end-marker"})
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	c, err := GetConversation(db, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != ConversationClosed || c.Queued != 0 {
		t.Errorf("status %q, queued %d; want closed with nothing queued", c.Status, c.Queued)
	}
	if ids, _ := Recoverable(db); len(ids) != 0 {
		t.Errorf("recoverable %v, want none", ids)
	}
	if left, err := LeftTasks(db); err != nil || len(left) != 0 {
		t.Errorf("tasks not ended %v, %v; want none", left, err)
	}
	head, items, err := GetChat(db, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(head.Queued) != 0 || len(items) == 0 || items[len(items)-1].Task == nil || items[len(items)-1].Task.TaskID != "bg-1" {
		t.Errorf("chat queued %+v, last item %+v; want the end told in the history", head.Queued, items[len(items)-1])
	}
}
