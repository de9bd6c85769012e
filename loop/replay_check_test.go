package loop_test

import (
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools"
)

// liveChecked is a tool whose Check reads live state (as browser_act's
// reads the page's outline): refs it knows pass.
type liveChecked struct {
	counter
	known atomic.Value // string: the ref the live state holds
}

func (l *liveChecked) Check(_ tools.Env, args json.RawMessage) error {
	var a struct{ Ref string }
	json.Unmarshal(args, &a)
	if known, _ := l.known.Load().(string); a.Ref != known {
		return errors.New("ref " + a.Ref + " is not in this conversation's last outline")
	}
	return nil
}

// recordChecked records a run of two calls: ref e1 (live state knows it:
// it runs) and ref e2 (refused by Check).
func recordChecked(t *testing.T) (*harness, *liveChecked, []events.Envelope, string) {
	t.Helper()
	act := &liveChecked{counter: counter{name: "act"}}
	act.known.Store("e1")
	h := newHarness(t, map[string][]reply{"fake:a": {use("act", `{"ref":"e1"}`), use("act", `{"ref":"e2"}`), say("done")}}, act)
	h.send("act twice")
	h.turn()
	res := eventsOf[*events.ToolCompleted](h.events())
	if len(res) != 2 || res[0].Outcome != "" || res[1].RefusedBy != events.RefusedByCheck || !strings.Contains(res[1].Output, "e2 is not in") {
		t.Fatalf("recorded results = %+v %+v, want e1 run and e2 refused by its Check", *res[0], *res[1])
	}
	envs, err := h.log.ReadAll(t.Context(), events.Conv(h.conv).Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return h, act, envs, eventsOf[*events.RunStarted](h.events())[0].RunID
}

// Issue 25 item 2: a replay answers each call's Check as it was recorded,
// not from today's live state: with the live state gone (no ref known), e1
// still passes to the gate and runs as recorded, and e2 is refused with the
// recorded words — identical. A gate change still shows: the same replay
// with act needing approval diverges at e1's call.
func TestReplayAnswersCheckAsRecorded(t *testing.T) {
	h, act, envs, run := recordChecked(t)
	act.known.Store("") // a replay has no page
	rep, err := loop.Replay(t.Context(), envs, run, h.agent, h.deps.Tools, time.UTC, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diverged != nil {
		t.Fatalf("replay with the live state gone diverged at %+v", *rep.Diverged)
	}
	if n := act.runs.Load(); n != 1 {
		t.Fatalf("act ran %d times, want 1 (the recording)", n)
	}
	act.known.Store("e2") // today's state would refuse e1 and pass e2
	if rep, _ := loop.Replay(t.Context(), envs, run, h.agent, h.deps.Tools, time.UTC, nil); rep == nil || rep.Diverged != nil {
		t.Fatalf("replay with another live state diverged: %+v", rep)
	}
	act.ask = "it acts on the page" // the gate asks now: the decision is the gate's, not the recorded Check's
	rep, err = loop.Replay(t.Context(), envs, run, h.agent, h.deps.Tools, time.UTC, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diverged == nil || rep.Diverged.Type != events.TypeToolCalled {
		t.Fatalf("replay with act gated: diverged at %+v, want e1's tool_called", rep.Diverged)
	}
}

// A recording made before refused_by existed: a call blocked before the
// gate is refused in replay when the tool's own Check refuses it with the
// recorded words.
func TestReplayChecksAnOlderRecordingWithTheToolsCheck(t *testing.T) {
	h, act, envs, run := recordChecked(t)
	for i, env := range envs {
		if env.Type == events.TypeToolCompleted && strings.Contains(string(env.Data), `"refused_by"`) {
			var m map[string]any
			json.Unmarshal(env.Data, &m)
			delete(m, "refused_by")
			envs[i].Data, _ = json.Marshal(m)
		}
	}
	act.known.Store("e1")
	rep, err := loop.Replay(t.Context(), envs, run, h.agent, h.deps.Tools, time.UTC, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diverged != nil {
		t.Fatalf("replay of the older recording diverged at %+v", *rep.Diverged)
	}
}
