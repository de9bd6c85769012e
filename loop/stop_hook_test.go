package loop_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
)

// Issue 27: the owner's Stop hook runs when a stopped run ends, as at any
// other end (it is the owner's "the run ended" — a notification, a
// clean-up — and cannot undo the stop: its exit code 2 is only recorded).
// It runs once the run is closed stopped, with status stopped, reason
// stopped_by_owner and who stopped it, and is recorded as a hook_ran after
// the run_finished; nothing else runs and the model is not called again.
func TestStopHookRunsWhenAStoppedRunEnds(t *testing.T) {
	hold := &holder{counter: counter{name: "wait_here"}, entered: make(chan struct{})}
	h := newHarness(t, map[string][]reply{"fake:a": {use("wait_here", `{}`), say("never said")}}, hold)
	h.agent.Autonomous = true
	writeHooks(t, h.agent.Dir, `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"cat > stop-hook.json"}]}]}}`)
	h.send("wait there")
	w := h.startWorker(nil)
	<-hold.entered
	if _, err := w.Stop(t.Context(), h.conv, events.StopAll, events.StopByWeb); err != nil {
		t.Fatal(err)
	}
	waitFinished(t, h, 1)
	wantStopped(t, h, events.StopByWeb)
	var ran *events.HookRan
	waitFor(t, "the Stop hook recorded", func() bool {
		evs := h.events()
		for i, e := range evs {
			if r, ok := e.(*events.HookRan); ok && r.Hook == "Stop" {
				if _, before := evs[i-1].(*events.RunFinished); !before {
					t.Fatalf("the Stop hook ran before the run was closed: %T before it", evs[i-1])
				}
				ran = r
				return true
			}
		}
		return false
	})
	if ran.ExitCode != 0 {
		t.Fatalf("hook_ran = %+v", ran)
	}
	stdin, _ := os.ReadFile(filepath.Join(h.agent.Workspace, "stop-hook.json"))
	for _, want := range []string{`"hook_event_name":"Stop"`, `"status":"stopped"`, `"reason":"stopped_by_owner"`, `"stopped_by":"web"`} {
		if !strings.Contains(string(stdin), want) {
			t.Errorf("the Stop hook's stdin %s lacks %s", stdin, want)
		}
	}
	waitFor(t, "the worker idle", w.Idle)
	if n := len(eventsOf[*events.HookRan](h.events())); n != 1 {
		t.Fatalf("%d hooks ran, want the one Stop", n)
	}
	if n := h.models["fake:a"].calls(); n != 1 {
		t.Fatalf("the model was asked %d times", n)
	}
}
