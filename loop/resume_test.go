package loop_test

import (
	"encoding/json"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
)

// crashAfter records a run's events up to a crash, then restarts the
// conversation's writer as a new process would.
func (h *harness) crashAfter(evs ...events.Event) {
	h.t.Helper()
	for _, e := range evs {
		h.append(e)
	}
	h.convs = loop.NewConvs(h.log, nil)
}

// Issue 10 item 6: a crash between the final reply (no tool calls) and
// run_finished: the resumed run finishes with that reply and the model is
// not asked again.
func TestResumeAfterFinalReplyFinishesWithIt(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {say("a second answer")}})
	h.send("hi")
	h.crashAfter(
		&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"},
		&events.ModelCalled{RunID: "r1", Step: 1, Route: "fake:a", Model: "a", Text: "the answer"},
	)
	h.turn()
	if n := h.models["fake:a"].calls(); n != 0 {
		t.Errorf("model called %d times after the crash, want 0", n)
	}
	evs := h.events()
	fs := eventsOf[*events.RunFinished](evs)
	if len(fs) != 1 || fs[0].RunID != "r1" || fs[0].Status != events.RunDone || fs[0].Reason != "" {
		t.Errorf("finishes = %+v, want r1 done once", fs)
	}
	if replies := eventsOf[*events.ModelCalled](evs); len(replies) != 1 {
		t.Errorf("%d replies, want the one made before the crash", len(replies))
	}
	if st := h.state(); st.OpenRun != "" || st.Messages[len(st.Messages)-1].Text != "the answer" {
		t.Errorf("state: open %q, last %+v", st.OpenRun, st.Messages[len(st.Messages)-1])
	}
}

// Issue 10 item 6: after ask_user the run has asked; a crash before its
// run_finished does not ask the model (or the owner) again.
func TestResumeAfterAskUserFinishesTheRun(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {say("asking again")}})
	h.send("book a table")
	ask := events.ToolCallRequest{ID: "q1", Name: "ask_user", Arguments: json.RawMessage(`{"question":"for how many?"}`)}
	h.crashAfter(
		&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"},
		&events.ModelCalled{RunID: "r1", Step: 1, Route: "fake:a", Model: "a", ToolCalls: []events.ToolCallRequest{ask}},
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "q1", Tool: "ask_user", Output: "Your question was shown to the owner."},
	)
	h.turn()
	if n := h.models["fake:a"].calls(); n != 0 {
		t.Errorf("model called %d times after the crash, want 0", n)
	}
	evs := h.events()
	fs := eventsOf[*events.RunFinished](evs)
	if len(fs) != 1 || fs[0].RunID != "r1" || fs[0].Status != events.RunDone || fs[0].Reason != "ask_user" {
		t.Errorf("finishes = %+v, want r1 done (ask_user) once", fs)
	}
	if n := len(eventsOf[*events.ToolCompleted](evs)); n != 1 {
		t.Errorf("%d tool results, want 1 (the question is not answered twice)", n)
	}
}

// The other side: a reply whose tool calls all have results is not an end;
// the resumed run asks the model for its next step.
func TestResumeAfterAnsweredToolCallsAsksTheModel(t *testing.T) {
	tool := &counter{name: "lookup"}
	h := newHarness(t, map[string][]reply{"fake:a": {say("found it")}}, tool)
	h.send("look it up")
	call := events.ToolCallRequest{ID: "k1", Name: "lookup", Arguments: json.RawMessage(`{}`)}
	h.crashAfter(
		&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"},
		&events.ModelCalled{RunID: "r1", Step: 1, Route: "fake:a", Model: "a", ToolCalls: []events.ToolCallRequest{call}},
		&events.ToolCalled{RunID: "r1", Step: 1, CallID: "k1", Tool: "lookup", Arguments: call.Arguments},
		&events.ToolCompleted{RunID: "r1", Step: 1, CallID: "k1", Tool: "lookup", Output: "ran lookup"},
	)
	h.turn()
	if n := h.models["fake:a"].calls(); n != 1 {
		t.Errorf("model called %d times, want 1 (the run had not answered yet)", n)
	}
	if tool.runs.Load() != 0 {
		t.Errorf("the tool ran again after the crash")
	}
	if f := lastFinish(t, h.events()); f.RunID != "r1" || f.Status != events.RunDone {
		t.Errorf("finish = %+v", f)
	}
	if st := h.state(); st.Messages[len(st.Messages)-1].Text != "found it" {
		t.Errorf("last message %+v", st.Messages[len(st.Messages)-1])
	}
}

// A run started on new messages after an answered one: the previous run's
// reply is not this run's end.
func TestResumeNewRunIgnoresThePreviousReply(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {say("second answer")}})
	h.send("first")
	h.append(&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"})
	h.append(&events.ModelCalled{RunID: "r1", Step: 1, Route: "fake:a", Model: "a", Text: "first answer"})
	h.append(&events.RunFinished{RunID: "r1", Status: events.RunDone})
	h.send("second")
	h.crashAfter(&events.RunStarted{RunID: "r2", Agent: "master", Trigger: "message"})
	h.turn()
	if n := h.models["fake:a"].calls(); n != 1 {
		t.Errorf("model called %d times, want 1", n)
	}
	if st := h.state(); st.OpenRun != "" || st.Messages[len(st.Messages)-1].Text != "second answer" {
		t.Errorf("state: open %q, last %+v", st.OpenRun, st.Messages[len(st.Messages)-1])
	}
}
