package loop_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/notes"
	"github.com/my-agent-crew/crew/tools/recall"
)

// TestReplayReadsTheEarlierOnThisTopicNoteAsStored: the "earlier, on this
// topic" section is computed once, when the owner's first message is
// stored, and travels in it: the model reads it in the run, a replay reads
// the same bytes (though recall would find something else by then), and
// the next message of the conversation carries no new section.
func TestReplayReadsTheEarlierOnThisTopicNoteAsStored(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {say("bleed it again"), say("the valve is fine")}})
	found := "The radiator keeps hissing since October"
	var searched int
	earlier := func(ctx context.Context, agent, conv, text string) ([]recall.Hit, error) {
		searched++
		return []recall.Hit{{Kind: "message", Source: "conversation web-old · 2026-10-14", Ref: "crew.conv.web-old.message_received@7", Snippet: found}}, nil
	}
	none := func(context.Context, loop.Opening) loop.Opened { return loop.Opened{} }
	h.convs.SetOpener(notes.WithEarlier(none, earlier, slog.New(slog.DiscardHandler)))
	h.send("the radiator hisses again")
	h.turn()
	h.send("and the valve?")
	h.turn()
	if searched != 1 {
		t.Errorf("searched %d times, want once (the first message)", searched)
	}
	seen := h.models["fake:a"].seen
	first := userTexts(seen[0])
	if len(first) != 1 || !strings.HasPrefix(first[0], loop.Frame+"\n"+notes.EarlierTitle+":\n1. conversation web-old") || !strings.Contains(first[0], found) ||
		!strings.HasSuffix(first[0], loop.EndFrame+"\n\nthe radiator hisses again") {
		t.Fatalf("the run read:\n%q", first)
	}
	if later := userTexts(seen[1]); len(later) != 2 || later[1] != "and the valve?" {
		t.Errorf("the next message read:\n%q", later)
	}
	envs, err := h.log.ReadAll(t.Context(), events.Conv(h.conv).Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	runs := eventsOf[*events.RunStarted](h.events())
	found = "something else entirely" // what recall would find now
	replayed := &fakeModel{route: "fake:a", replies: []reply{say("bleed it again")}}
	rep, err := loop.Replay(t.Context(), envs, runs[0].RunID, h.agent, h.deps.Tools, time.UTC, replayed)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diverged != nil {
		t.Errorf("diverged at %+v", *rep.Diverged)
	}
	if len(replayed.seen) != 1 || strings.Join(userTexts(replayed.seen[0]), "\n") != first[0] {
		t.Errorf("the replay read:\n%q\nthe run read:\n%q", replayed.seen, first)
	}
	if searched != 1 {
		t.Errorf("the replay searched again")
	}
}
