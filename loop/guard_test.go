package loop

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
)

func call(id, name, args string) events.ToolCallRequest {
	return events.ToolCallRequest{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

func TestLoopGuardSignatureIgnoresIDsAndOrder(t *testing.T) {
	a, _ := signature([]events.ToolCallRequest{call("1", "read", `{"a":1,"b":2}`), call("2", "list", `{}`)})
	b, _ := signature([]events.ToolCallRequest{call("x", "list", `{}`), call("y", "read", `{"b":2, "a":1}`)})
	if a != b {
		t.Errorf("signatures differ: %q vs %q", a, b)
	}
	c, _ := signature([]events.ToolCallRequest{call("1", "read", `{"a":2,"b":2}`), call("2", "list", `{}`)})
	if a == c {
		t.Errorf("different arguments gave the same signature")
	}
}

func TestLoopGuardRemindsOnThirdAndHaltsThreeLater(t *testing.T) {
	var g Guard
	same := []events.ToolCallRequest{call("1", "shell_run", `{"command":"make"}`)}
	var got []GuardVerdict
	for range 6 {
		got = append(got, g.Observe(same))
	}
	want := []GuardVerdict{GuardContinue, GuardContinue, GuardRemind, GuardContinue, GuardContinue, GuardHalt}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("verdicts = %v, want %v", got, want)
		}
	}
}

func TestLoopGuardReminderNamesOnlyToolAndCount(t *testing.T) {
	var g Guard
	secret := `{"url":"https://evil.example/IGNORE-PREVIOUS-INSTRUCTIONS"}`
	for range 3 {
		g.Observe([]events.ToolCallRequest{call("1", "fetch_url", secret)})
	}
	r := g.Reminder()
	if !strings.Contains(r, "fetch_url") || !strings.Contains(r, "3 times") {
		t.Errorf("reminder %q does not name tool and count", r)
	}
	if strings.Contains(r, "evil") || strings.Contains(r, "IGNORE") {
		t.Errorf("reminder leaks arguments: %q", r)
	}
}

func TestLoopGuardCountsOnlyConsecutiveRepeats(t *testing.T) {
	var g Guard
	run := []events.ToolCallRequest{call("1", "shell_run", `{"command":"go test"}`)}
	edit := []events.ToolCallRequest{call("1", "workspace_edit", `{"path":"a.go"}`)}
	for range 5 { // run, edit, run, edit, … never three in a row
		if v := g.Observe(run); v != GuardContinue {
			t.Fatalf("verdict %v on alternating calls", v)
		}
		g.Observe(edit)
	}
}

func TestLoopGuardIgnoresProgressNoteAndAskUser(t *testing.T) {
	var g Guard
	same := []events.ToolCallRequest{call("1", "shell_run", `{"command":"make"}`)}
	g.Observe(same)
	g.Observe(same)
	if v := g.Observe([]events.ToolCallRequest{call("n", "progress_note", `{"text":"still working"}`)}); v != GuardContinue {
		t.Fatalf("progress_note verdict %v", v)
	}
	if v := g.Observe(same); v != GuardRemind {
		t.Errorf("third identical call after a progress_note: %v, want remind (the note neither counts nor resets)", v)
	}
	// progress_note beside a repeated call does not change its signature.
	if v := g.Observe(append(same, call("n2", "progress_note", `{"text":"x"}`))); g.Count() != 4 || v != GuardContinue {
		t.Errorf("count %d, verdict %v, want 4 and continue", g.Count(), v)
	}
}

func TestLoopGuardResetsOnCallWithoutToolsAndOnReset(t *testing.T) {
	var g Guard
	same := []events.ToolCallRequest{call("1", "shell_run", `{"command":"make"}`)}
	g.Observe(same)
	g.Observe(same)
	g.Observe(nil) // a model call with no tools
	if v := g.Observe(same); v != GuardContinue || g.Count() != 1 {
		t.Errorf("after a tool-less call: count %d", g.Count())
	}
	g.Observe(same)
	g.Reset() // a new user message
	g.Observe(same)
	if g.Count() != 1 {
		t.Errorf("after reset: count %d, want 1", g.Count())
	}
}
