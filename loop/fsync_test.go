package loop_test

import (
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
)

// ADR 0008: with sync "always" a turn fsyncs at its decisions only — the
// run's start, the start of a call that changes things (before it runs)
// and the run's end; a model's reply, a read-only call's start and every
// result are stored deferred and made durable by the next of those.
func TestLoopStepFsyncsOncePerDecision(t *testing.T) {
	look, change := &counter{name: "look"}, &counter{name: "change", write: true}
	h := newHarness(t, map[string][]reply{"fake:a": {use("look", `{}`), use("change", `{}`), say("done")}}, look, change)
	_, log := eventstest.Start(t, eventstest.WithSync(events.SyncAlways))
	h.log, h.convs = log, loop.NewConvs(log, nil)
	h.agent.Autonomous = true // the change runs without an approval
	h.send("go")
	before := log.Fsyncs()
	h.turn()
	if look.runs.Load() != 1 || change.runs.Load() != 1 {
		t.Fatalf("runs: look %d, change %d; want 1 each", look.runs.Load(), change.runs.Load())
	}
	evs := h.events()
	if f := lastFinish(t, evs); f.Status != events.RunDone {
		t.Fatalf("run finished %s", f.Status)
	}
	if n := len(eventsOf[*events.ToolCalled](evs)); n != 2 {
		t.Fatalf("%d tool_called, want 2: a deferred start is still stored", n)
	}
	// run_started, change's tool_called, run_finished: three of the
	// turn's ten events.
	if got := log.Fsyncs() - before; got != 3 {
		t.Fatalf("the turn made %d fsyncs, want 3 (run start, the changing call's start, run end)", got)
	}
}
