package loop_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools/fence"
)

func applyAll(t *testing.T, st *loop.State, evs ...events.Event) {
	t.Helper()
	for _, e := range evs {
		env := events.MustNew(e)
		env.Seq = st.Seq + 1
		if err := st.Apply(env); err != nil {
			t.Fatal(err)
		}
	}
}

// The conversation's state folds what canvas tool results and canvas
// notes showed (the newest version known whole, never going back) and
// what the open run wrote; a new run counts afresh (the per-turn limits).
func TestCanvasStateFoldsSeenVersionsAndRunWrites(t *testing.T) {
	st := &loop.State{}
	applyAll(t, st,
		&events.ConversationOpened{Agent: "chef", Channel: "delegate", RootID: "api-root", RootSource: "api"},
		&events.RunStarted{RunID: "r1", Agent: "chef", Trigger: "delegate"},
		&events.ToolCompleted{RunID: "r1", CallID: "c1", Tool: "artifact_create", Canvas: &events.CanvasRef{Artifact: "a1", Version: 1, Op: events.OpCreate, Whole: true}},
		&events.ToolCompleted{RunID: "r1", CallID: "c2", Tool: "artifact_edit", Canvas: &events.CanvasRef{Artifact: "a1", Version: 2, Op: events.OpEdit, Whole: true}},
		&events.ToolCompleted{RunID: "r1", CallID: "c3", Tool: "artifact_read", Canvas: &events.CanvasRef{Artifact: "a1", Version: 1, Whole: true}},
		&events.ToolCompleted{RunID: "r1", CallID: "c4", Tool: "artifact_edit", IsError: true, Canvas: &events.CanvasRef{Artifact: "a2", Version: 4, Op: events.OpEdit}},
		&events.ToolCompleted{RunID: "r1", CallID: "c5", Tool: "artifact_import", Canvas: &events.CanvasRef{Artifact: "a3", Version: 1, Op: events.OpImport, Whole: true}},
	)
	if got := st.CanvasSeen(); got["a1"] != 2 || got["a3"] != 1 || got["a2"] != 0 {
		t.Errorf("seen = %v, want a1 at 2 (an older read does not go back), a3 at 1, a2 unseen", got)
	}
	if st.RunCanvas.Created != 2 || st.RunCanvas.Writes["a1"] != 1 || st.RunCanvas.Writes["a2"] != 0 {
		t.Errorf("run writes = %+v, want 2 created, a1 written once, a refused write not counted", st.RunCanvas)
	}
	if st.CanvasChannel() != "api" {
		t.Errorf("a child follows its root's channel: %q", st.CanvasChannel())
	}
	applyAll(t, st,
		&events.RunFinished{RunID: "r1", Status: events.RunDone},
		&events.MessageReceived{Channel: "web", Text: "next", CanvasNotes: &events.CanvasNotes{Text: "n", Told: []events.CanvasTold{{Artifact: "a1", Version: 5, Whole: true}, {Artifact: "a2", Version: 6}}}},
		&events.RunStarted{RunID: "r2", Agent: "chef", Trigger: "message"},
	)
	if st.RunCanvas.Created != 0 || len(st.RunCanvas.Writes) != 0 {
		t.Errorf("a new run counts afresh: %+v", st.RunCanvas)
	}
	if got := st.CanvasSeen(); got["a1"] != 5 || got["a2"] != 0 || st.Canvas["a2"].Told != 6 {
		t.Errorf("after the notes: seen %v, marks %v", got, st.Canvas)
	}
}

// On the api channel the system prompt says canvases are read-only.
func TestCanvasAPIChannelSystemPromptSaysReadOnly(t *testing.T) {
	p := loop.Prompt{AgentDir: t.TempDir(), Now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	plain, err := loop.SystemPrompt(p)
	if err != nil {
		t.Fatal(err)
	}
	p.CanvasReadOnly = true
	ro, _ := loop.SystemPrompt(p)
	if strings.Contains(plain, "API channel") || !strings.Contains(ro, loop.CanvasReadOnlyLine) || !strings.HasSuffix(ro, "Today: 2026-12-01.") {
		t.Errorf("prompt:\n%s", ro)
	}
}

// userTexts are the user messages of one model call.
func userTexts(msgs []llm.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == llm.RoleUser {
			for _, p := range m.Parts {
				if p.ImageURL == "" {
					out = append(out, p.Text)
				}
			}
		}
	}
	return out
}

// A message's canvas notes are read framed, after its memory notes and
// before its words, in every call of the turn it opened; from the next
// turn on a fixed line stands in for them, so that turn's history is the
// same bytes at every call.
func TestCanvasNoteReplacedByFixedLineFromNextTurn(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {use("progress_note", `{"text":"reading"}`), say("first answer"), say("second answer")}})
	h.convs.SetOpener(func(ctx context.Context, o loop.Opening) loop.Opened {
		return loop.Opened{Notes: &events.TurnNotes{Text: "memory of " + o.Text}, CanvasNotes: &events.CanvasNotes{Text: "canvas of " + o.Text + " [End of canvases]"}}
	})
	h.send("one")
	h.turn()
	h.send("two")
	h.turn()
	seen := h.models["fake:a"].seen
	if len(seen) != 3 {
		t.Fatalf("%d model calls", len(seen))
	}
	framed := loop.Frame + "\nmemory of one\n" + loop.EndFrame + "\n\n" + loop.CanvasFrame + "\n" + fence.Seal("canvas notes", "canvas of one (quoted text: End of canvases)") + "\n" + loop.EndCanvasFrame + "\n\none"
	for i := range 2 {
		if got := userTexts(seen[i]); len(got) != 1 || got[0] != framed {
			t.Errorf("call %d of the first turn reads:\n%q\nwant\n%q", i+1, got, framed)
		}
	}
	got := userTexts(seen[2])
	wantFirst := loop.Frame + "\nmemory of one\n" + loop.EndFrame + "\n\n" + loop.CanvasShownLine + "\n\none"
	if len(got) != 2 || got[0] != wantFirst || !strings.Contains(got[1], "canvas of two") {
		t.Errorf("the next turn reads:\n%q", got)
	}
}

// The owner's open canvas is stored on the conversation through its
// writer, at the sequence FocusCanvas answers; a conversation no agent
// took up is refused and nothing is stored.
func TestFocusCanvasStoresOnTheConversationOnly(t *testing.T) {
	_, log := eventstest.Start(t)
	convs := loop.NewConvs(log, nil)
	ctx := t.Context()
	conv, err := convs.Get(ctx, "focus-c1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conv.Append(ctx, func(*loop.State) ([]events.Event, error) {
		return []events.Event{&events.ConversationOpened{Agent: "master", Channel: "web"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	seq, err := convs.FocusCanvas(ctx, "focus-c1", events.CanvasFocused{Artifact: "a1", FromLine: 2, ToLine: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got *events.CanvasFocused
	for env, err := range log.Read(ctx, events.Conv("focus-c1").Filter(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		if e, err := env.Decode(); err == nil && env.Seq == seq {
			got, _ = e.(*events.CanvasFocused)
		}
	}
	if got == nil || got.Artifact != "a1" || got.FromLine != 2 || got.ToLine != 3 {
		t.Errorf("the conversation's event at %d: %+v, want the focus", seq, got)
	}
	before, _ := log.Last(ctx, events.Root+".>")
	if _, err := convs.FocusCanvas(ctx, "nobody-here", events.CanvasFocused{Artifact: "a1"}); !errors.Is(err, loop.ErrUnknownConversation) {
		t.Errorf("focus on no conversation: %v, want ErrUnknownConversation", err)
	}
	if after, _ := log.Last(ctx, events.Root+".>"); after != before {
		t.Errorf("a refused focus stored something: last %d → %d", before, after)
	}
}
