package loop_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
)

// A replay has no effects: the owner's hooks (R-LOOP-8) are answered as
// their hook_ran events recorded them, never run again — a hook that posts
// to a webhook or writes a file must not run twice because a run was
// replayed for debugging. A recorded block is still a block.
func TestReplayAnswersHooksAsRecorded(t *testing.T) {
	tool := &counter{name: "look"}
	h := newHarness(t, map[string][]reply{"fake:a": {use("look", `{}`), use("look", `{"again":true}`), say("ok")}}, tool)
	h.agent.Autonomous = true
	marker := filepath.Join(t.TempDir(), "hook-ran.txt")
	// The second call is blocked by PreToolUse (exit code 2): its stderr is
	// the tool result the model reads, in the replay as it was live.
	writeHooks(t, h.agent.Dir, `{"hooks":{
		"UserPromptSubmit":[{"hooks":[{"type":"command","command":"echo prompt >> `+marker+`"}]}],
		"PreToolUse":[{"matcher":".*","hooks":[{"type":"command","command":"echo pre >> `+marker+`; if grep -q again; then echo not twice >&2; exit 2; fi"}]}],
		"PostToolUse":[{"matcher":".*","hooks":[{"type":"command","command":"echo post >> `+marker+`"}]}],
		"Stop":[{"hooks":[{"type":"command","command":"echo stop >> `+marker+`"}]}]}}`)
	h.send("look around")
	h.turn()
	live, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	if want := "prompt\npre\npost\npre\nstop\n"; string(live) != want {
		t.Fatalf("the live run's hooks wrote %q, want %q", live, want)
	}
	if n := tool.runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times live, want 1 (the second call blocked)", n)
	}
	envs, err := h.log.ReadAll(t.Context(), events.Conv(h.conv).Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	run := eventsOf[*events.RunStarted](h.events())[0].RunID
	rep, err := loop.Replay(t.Context(), envs, run, h.agent, h.deps.Tools, time.UTC, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diverged != nil {
		t.Fatalf("the replay diverged: %+v", rep.Diverged)
	}
	after, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(live) {
		t.Fatalf("the replay ran the owner's hooks: the file went from %q to %q", live, after)
	}
	if n := tool.runs.Load(); n != 1 {
		t.Fatalf("the replay ran the tool: %d runs", n)
	}
}
