package loop_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
)

func writeHooks(t *testing.T, dir, json string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, ".agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".agents", "hooks.json"), []byte(json), 0o600); err != nil {
		t.Fatal(err)
	}
}

// R-LOOP-8: a PreToolUse hook that exits 2 blocks the call; its stderr is
// the tool result, the tool never runs, and the hook's run is an event.
func TestHookPreToolUseBlocksWithReason(t *testing.T) {
	tool := &counter{name: "look"}
	h := newHarness(t, map[string][]reply{"fake:a": {use("look", `{"a":1}`), say("ok")}}, tool)
	h.agent.Autonomous = true
	writeHooks(t, h.agent.Dir, `{"hooks":{"PreToolUse":[{"matcher":"look","hooks":[{"type":"command","command":"cat > stdin.json; echo 'not on Fridays' >&2; exit 2"}]}]}}`)
	h.send("go")
	h.turn()
	if tool.runs.Load() != 0 {
		t.Fatal("the blocked tool ran")
	}
	evs := h.events()
	done := eventsOf[*events.ToolCompleted](evs)
	if len(done) != 1 || done[0].Outcome != "blocked" || !strings.Contains(done[0].Output, "not on Fridays") {
		t.Fatalf("result = %+v", done)
	}
	if len(eventsOf[*events.ToolCalled](evs)) != 0 {
		t.Error("a blocked call was recorded as called")
	}
	ran := eventsOf[*events.HookRan](evs)
	if len(ran) == 0 || ran[0].Hook != "PreToolUse" || !ran[0].Blocked || ran[0].ExitCode != 2 || ran[0].Tool != "look" {
		t.Fatalf("hook_ran = %+v", ran)
	}
	stdin, _ := os.ReadFile(filepath.Join(h.agent.Workspace, "stdin.json"))
	for _, want := range []string{`"hook_event_name":"PreToolUse"`, `"tool_name":"look"`, `"tool_input":{"a":1}`, `"session_id":"c1"`} {
		if !strings.Contains(string(stdin), want) {
			t.Errorf("hook stdin %s lacks %s", stdin, want)
		}
	}
}

// R-LOOP-8: UserPromptSubmit can stop a run before any model call;
// PostToolUse feedback (exit 2) reaches the model; Stop runs at the end.
func TestHookUserPromptSubmitPostToolUseAndStop(t *testing.T) {
	tool := &counter{name: "look"}
	h := newHarness(t, map[string][]reply{"fake:a": {use("look", `{}`), say("ok")}}, tool)
	h.agent.Autonomous = true
	writeHooks(t, h.agent.Dir, `{"hooks":{
		"UserPromptSubmit":[{"hooks":[{"type":"command","command":"grep -q secret && { echo 'no secrets here' >&2; exit 2; }; exit 0"}]}],
		"PostToolUse":[{"matcher":".*","hooks":[{"type":"command","command":"echo 'the output was checked' >&2; exit 2"}]}],
		"Stop":[{"hooks":[{"type":"command","command":"echo stopped > stop.txt"}]}]}}`)
	h.send("my secret plan")
	h.turn()
	if f := lastFinish(t, h.events()); f.Status != events.RunHalted || f.Reason != "hook" || !strings.Contains(f.Error, "no secrets here") {
		t.Fatalf("finish = %+v", f)
	}
	if len(h.models["fake:a"].seen) != 0 {
		t.Fatal("the model was called after UserPromptSubmit blocked")
	}
	h.send("look around")
	h.turn()
	if tool.runs.Load() != 1 {
		t.Fatalf("tool runs = %d", tool.runs.Load())
	}
	done := eventsOf[*events.ToolCompleted](h.events())
	if len(done) != 1 || !strings.Contains(done[0].Output, "ran look") || !strings.Contains(done[0].Output, "the output was checked") {
		t.Fatalf("result = %+v", done)
	}
	if b, err := os.ReadFile(filepath.Join(h.agent.Workspace, "stop.txt")); err != nil || strings.TrimSpace(string(b)) != "stopped" {
		t.Errorf("Stop hook: %q %v", b, err)
	}
}

// A hooks.json that does not load fails closed: the call is not run and
// the result names the file and the place.
func TestHookBrokenFileFailsClosed(t *testing.T) {
	tool := &counter{name: "look"}
	h := newHarness(t, map[string][]reply{"fake:a": {use("look", `{}`), say("ok")}}, tool)
	h.agent.Autonomous = true
	writeHooks(t, h.agent.Dir, "{\"hooks\": {\"PreToolUse\": [}\n")
	h.send("go")
	h.turn()
	if tool.runs.Load() != 0 {
		t.Fatal("a tool ran while the hooks file was broken")
	}
	if f := lastFinish(t, h.events()); f.Reason != "hook" || !strings.Contains(f.Error, "hooks.json:1:") {
		t.Fatalf("finish = %+v", f)
	}
}

// R-LOOP-8: words a UserPromptSubmit hook blocked never reach a model,
// not in this run and not in the next turn's history; the message's turn
// notes stay.
func TestHookBlockedPromptIsWithheldFromLaterTurns(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {say("ok")}})
	writeHooks(t, h.agent.Dir, `{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"grep -q hunter2 && { echo 'no passwords' >&2; exit 2; }; exit 0"}]}]}}`)
	h.send("my password is hunter2")
	h.turn()
	h.send("what did I say?")
	h.turn()
	seen := h.models["fake:a"].seen
	if len(seen) != 1 {
		t.Fatalf("%d model calls, want 1", len(seen))
	}
	for _, m := range seen[0] {
		for _, p := range m.Parts {
			if strings.Contains(fmt.Sprint(p), "hunter2") {
				t.Fatalf("the blocked words reached the model: %v", p)
			}
		}
	}
	if !strings.Contains(fmt.Sprint(seen[0]), "Withheld") {
		t.Errorf("the model was not told a message was withheld: %v", seen[0])
	}
}

// A run resumed after a crash between its start and its UserPromptSubmit
// hooks runs them before the first model call.
func TestHookUserPromptSubmitRunsOnResume(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {say("ok")}})
	writeHooks(t, h.agent.Dir, `{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"echo 'blocked on resume' >&2; exit 2"}]}]}}`)
	h.send("hello")
	h.append(&events.RunStarted{RunID: "r-crashed", Agent: "master", Trigger: "message"}) // the crash came here
	h.turn()
	if len(h.models["fake:a"].seen) != 0 {
		t.Fatal("the model was called without the prompt hook")
	}
	if f := lastFinish(t, h.events()); f.RunID != "r-crashed" || f.Reason != "hook" {
		t.Fatalf("finish = %+v", f)
	}
}

// A guard hook that cannot start, or runs past its timeout, blocks (fail
// closed) instead of letting the call through.
func TestHookThatCannotFinishBlocks(t *testing.T) {
	tool := &counter{name: "look"}
	h := newHarness(t, map[string][]reply{"fake:a": {use("look", `{}`), say("ok")}}, tool)
	h.agent.Autonomous = true
	writeHooks(t, h.agent.Dir, `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"sleep 5","timeout":0.2}]}]}}`)
	h.send("go")
	h.turn()
	if tool.runs.Load() != 0 {
		t.Fatal("the call ran although its guard timed out")
	}
	done := eventsOf[*events.ToolCompleted](h.events())
	if len(done) != 1 || done[0].Outcome != "blocked" || !strings.Contains(done[0].Output, "did not run to its end") {
		t.Fatalf("result = %+v", done)
	}
}
