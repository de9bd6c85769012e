package notes_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/notes"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/memory"
)

// testEnv is an agent folder and a home in temp dirs, at 2026-11-30 00:15
// in the owner's zone (23:15 UTC the day before), as in tools/memory's tests.
func testEnv(t *testing.T) tools.Env {
	t.Helper()
	home := t.TempDir()
	agent := filepath.Join(home, "agents", "cook")
	if err := os.MkdirAll(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	return tools.Env{
		AgentID: "cook", Conversation: "c1", AgentDir: agent, HomeDir: home,
	}
}

// clock is the tests' time (testEnv) for memory.Tools.
var clock = tools.Services{Clock: func() time.Time { return time.Date(2026, 11, 29, 23, 15, 0, 0, time.UTC) }, Location: time.FixedZone("CET", 3600)}

// call runs one of the memory tools.
func call(t *testing.T, env tools.Env, name, args string) tools.Result {
	t.Helper()
	reg, err := tools.New(memory.Tools(clock)...)
	if err != nil {
		t.Fatal(err)
	}
	tl, ok := reg.Lookup(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	res, err := tl.Run(t.Context(), env, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return res
}

// TestMemorySaveReachesNextTurnNotes: what memory_save writes comes back as
// new lines in the next turn-opening message.
func TestMemorySaveReachesNextTurnNotes(t *testing.T) {
	env := testEnv(t)
	call(t, env, "memory_save", `{"text":"a"}`)
	items, err := notes.Items(env.AgentDir, time.Date(2026, 11, 29, 23, 15, 0, 0, time.UTC), time.FixedZone("CET", 3600), notes.Summary{})
	if err != nil {
		t.Fatal(err)
	}
	first := notes.Compose(nil, items)
	call(t, env, "memory_save", `{"text":"b"}`)
	if items, err = notes.Items(env.AgentDir, time.Date(2026, 11, 29, 23, 15, 0, 0, time.UTC), time.FixedZone("CET", 3600), notes.Summary{}); err != nil {
		t.Fatal(err)
	}
	got := notes.Compose(map[string]events.NoteTold{first.Told[0].Key: first.Told[0]}, items)
	want := "Today's notes (memory/2026-11-30.md), new lines since last told:\n- 00:15 b"
	if got == nil || got.Text != want {
		t.Errorf("notes %+v, want %q", got, want)
	}
}
