package loop_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
)

// replayIdentical replays h's first run and fails on any divergence.
func replayIdentical(t *testing.T, h *harness) *loop.ReplayReport {
	t.Helper()
	envs, err := h.log.ReadAll(t.Context(), events.Conv(h.conv).Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	run := eventsOf[*events.RunStarted](h.events())[0].RunID
	rep, err := loop.Replay(t.Context(), envs, run, h.agent, h.deps.Tools, time.UTC, nil)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if rep.Diverged != nil {
		t.Fatalf("replay diverged at %+v", *rep.Diverged)
	}
	return rep
}

// R-OBS-3 with issue 27: a run the owner stopped while its command ran
// replays identically — the recorded stop arrives while the replayed call
// runs, the call is closed stopped as recorded and the run ends stopped,
// with no model call after.
func TestReplayStopWhileToolRuns(t *testing.T) {
	script := `echo partial-output; trap 'echo got-term; exit 3' TERM; sleep 60 & wait`
	h := newHarness(t, map[string][]reply{"fake:a": {use("shell_run", `{"command":`+strconv.Quote(script)+`}`), say("never said")}}, builtin("shell_run"))
	track := trackShell(t, h)
	h.agent.Autonomous = true
	h.send("run it")
	w := h.startWorker(nil)
	waitForSleep(t, track)
	if _, err := w.Stop(t.Context(), h.conv, events.StopAll, events.StopByTelegram); err != nil {
		t.Fatal(err)
	}
	waitFinished(t, h, 1)
	waitFor(t, "the worker idle", w.Idle)
	wantStopped(t, h, events.StopByTelegram)
	replayIdentical(t, h)
}

// The same for a stop that cut a script's nested call: the script is not
// run again, its stopped result and its nested call recorded stopped come
// back as recorded, and the run ends stopped.
func TestReplayStopDuringScriptNestedCall(t *testing.T) {
	hold := &holder{counter: counter{name: "wait_here"}, entered: make(chan struct{})}
	h := newHarness(t, map[string][]reply{"fake:a": {
		scriptCall("r = tools.call(\"wait_here\", {})\nprint(r[\"output\"])\nprint(\"after the call\")"), say("never said"),
	}}, hold)
	trackShell(t, h)
	h.deps.HomeDir = t.TempDir()
	h.send("run the script")
	w := h.startWorker(nil)
	<-hold.entered
	if _, err := w.Stop(t.Context(), h.conv, events.StopAll, events.StopByAPI); err != nil {
		t.Fatal(err)
	}
	waitFinished(t, h, 1)
	waitFor(t, "the worker idle", w.Idle)
	wantStopped(t, h, events.StopByAPI)
	replayIdentical(t, h) // a second run of wait_here would close entered again: a panic
}
