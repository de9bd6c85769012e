package projections

import (
	"slices"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// Seed 000 §2.4: a question makes the conversation awaiting_answer with
// pending_question (choices [] when none), indexes it for the answer path,
// keeps it recoverable (a restart loads it, so the sweep can expire it),
// and an answer, an expiry or the run's end clears it.
func TestPendingQuestionStatusAndRecovery(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	db := openDB(t, "")
	r := startRunner(t, log, db, config{})
	s := newSeeder(t, log)
	exp := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s.conv("c1", &events.MessageReceived{Channel: "web", Text: "book"})
	s.conv("c1", &events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"})
	last := s.conv("c1", &events.QuestionAsked{QuestionID: "q1", RunID: "r1", Step: 1, CallID: "t1", Question: "Which day?", ExpiresAt: exp})
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	c, err := GetConversation(db, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if q := c.PendingQuestion; c.Status != ConversationAwaitingAnswer || q == nil || q.ID != "q1" || q.Question != "Which day?" || q.Choices == nil || !q.ExpiresAt.Equal(exp) {
		t.Fatalf("status %q, pending %+v; want awaiting_answer with q1 and choices []", c.Status, c.PendingQuestion)
	}
	if conv, err := FindQuestion(db, "q1"); err != nil || conv != "c1" {
		t.Errorf("FindQuestion = %q, %v", conv, err)
	}
	if ids, _ := Recoverable(db); !slices.Equal(ids, []string{"c1"}) {
		t.Errorf("recoverable %v, want the conversation awaiting an answer", ids)
	}
	for _, tc := range []struct {
		name string
		end  events.Event
	}{
		{"answered", &events.QuestionAnswered{QuestionID: "q1", Answer: "Tuesday", Channel: "web"}},
		{"expired", &events.QuestionExpired{QuestionID: "q1"}},
	} {
		conv := "c-" + tc.name
		s.conv(conv, &events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"})
		s.conv(conv, &events.QuestionAsked{QuestionID: "q-" + tc.name, RunID: "r1", Step: 1, CallID: "t1", Question: "Which?", Choices: []string{"a", "b"}, ExpiresAt: exp})
		switch e := tc.end.(type) {
		case *events.QuestionAnswered:
			e.QuestionID = "q-" + tc.name
		case *events.QuestionExpired:
			e.QuestionID = "q-" + tc.name
		}
		last = s.conv(conv, tc.end)
		if err := r.WaitFor(ctx, last); err != nil {
			t.Fatal(err)
		}
		if c, _ := GetConversation(db, conv); c.PendingQuestion != nil || c.Status != ConversationRunning {
			t.Errorf("%s: status %q, pending %+v; want running, none", tc.name, c.Status, c.PendingQuestion)
		}
	}
	last = s.conv("c1", &events.RunFinished{RunID: "r1", Status: events.RunDone})
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if c, _ := GetConversation(db, "c1"); c.PendingQuestion != nil || c.Status != ConversationIdle {
		t.Errorf("after the run ended: status %q, pending %+v", c.Status, c.PendingQuestion)
	}
}
