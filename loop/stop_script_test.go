package loop_test

import (
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
)

// Issue 27 item 2 (a script's nested calls): a stop while tool_script
// runs a nested call cuts that call (recorded stopped), ends the script
// (its child process gone from the process table) and closes the
// tool_script call stopped; the run ends stopped and the model is not
// called again.
func TestStopWhileScriptNestedCallRuns(t *testing.T) {
	hold := &holder{counter: counter{name: "wait_here"}, entered: make(chan struct{})}
	h := newHarness(t, map[string][]reply{"fake:a": {
		scriptCall("r = tools.call(\"wait_here\", {})\nprint(r[\"output\"])\nprint(\"after the call\")"), say("never said"),
	}}, hold)
	track := trackShell(t, h)
	h.deps.HomeDir = t.TempDir()
	h.send("run the script")
	w := h.startWorker(nil)
	<-hold.entered
	groups := trackedGroups(t, track)
	if len(groups) == 0 {
		t.Fatal("the script's child is not in the process table")
	}
	if _, err := w.Stop(t.Context(), h.conv, events.StopAll, events.StopByAPI); err != nil {
		t.Fatal(err)
	}
	waitFinished(t, h, 1)
	wantStopped(t, h, events.StopByAPI)
	evs := h.events()
	res := eventsOf[*events.ToolCompleted](evs)
	if len(res) != 1 || res[0].Tool != "tool_script" || res[0].Outcome != "stopped" || strings.Contains(res[0].Output, "after the call") {
		t.Fatalf("results = %+v, want the script's call closed stopped", res)
	}
	nested := eventsOf[*events.NestedCall](evs)
	if len(nested) != 1 || nested[0].N != 1 || nested[0].Tool != "wait_here" || nested[0].Outcome != "stopped" || !nested[0].IsError {
		t.Fatalf("nested calls = %+v, want the cut call recorded stopped", nested)
	}
	for _, pgid := range groups {
		if left := procGroupLeft(t, pgid); len(left) > 0 {
			t.Fatalf("the script's processes are left: %v", left)
		}
	}
	waitFor(t, "the worker idle", w.Idle)
	if n := h.models["fake:a"].calls(); n != 1 {
		t.Fatalf("the model was asked %d times", n)
	}
}
