package notes_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/notes"
	"github.com/my-agent-crew/crew/tools/canvas"
	"github.com/my-agent-crew/crew/tools/recall"
)

// summaries is a summaries read model of one summary per channel.
type summaries struct {
	by    map[string]events.ChannelSummary
	err   error
	asked []string
}

func (s *summaries) Latest(agent, channel, exclude string) (events.ChannelSummary, bool, error) {
	s.asked = append(s.asked, agent+" "+channel+" "+exclude)
	if s.err != nil {
		return events.ChannelSummary{}, false, s.err
	}
	sum, ok := s.by[channel]
	return sum, ok && sum.Conversation != exclude, nil
}

// TestNewOpenerComposesEveryNote: the crew's opener tells the previous
// conversation's summary on the channel, today's note and what recall
// found earlier; canvas notes that cannot be made and a summary that
// cannot be read cost those notes, never the others, and each is said.
func TestNewOpenerComposesEveryNote(t *testing.T) {
	_, log := eventstest.Start(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "memory", "2026-12-03.md"), []byte("- 09:00 walk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sums := &summaries{by: map[string]events.ChannelSummary{"web": {Conversation: "web-02", Agent: "master", Channel: "web",
		Summary: "We planned the trip.", LastAt: time.Date(2026, 12, 2, 21, 0, 0, 0, time.UTC)}}}
	var said bytes.Buffer
	open := notes.New(notes.Config{Crew: loop.Agents{"master": {ID: "master", Dir: dir}}, Summaries: sums,
		Canvas: &canvas.Service{Store: brokenStore{}, Log: log}, Location: time.UTC,
		Earlier: func(ctx context.Context, agent, conv, text string) ([]recall.Hit, error) {
			return []recall.Hit{{Kind: "message", Source: "conversation web-01", Ref: "crew.conv.web-01.message_received@7", Snippet: "the trip"}}, nil
		},
		Clock:  func() time.Time { return time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC) },
		Logger: slog.New(slog.NewTextHandler(&said, nil))})
	first := loop.Opening{Conversation: "web-03", Agent: "master", Channel: "web", Text: "and the trip?", First: true}
	got := open(t.Context(), first)
	if got.Notes == nil {
		t.Fatal("no notes")
	}
	for _, want := range []string{"Previous conversation (last at 2026-12-02 21:00)", "We planned the trip.", "Today's notes (memory/2026-12-03.md)", "- 09:00 walk", notes.EarlierTitle} {
		if !strings.Contains(got.Notes.Text, want) {
			t.Errorf("notes lack %q:\n%s", want, got.Notes.Text)
		}
	}
	if got.CanvasNotes != nil || !strings.Contains(said.String(), "canvas notes not made") {
		t.Errorf("canvas notes %+v; said %s", got.CanvasNotes, said.String())
	}
	if len(sums.asked) != 1 || sums.asked[0] != "master web web-03" {
		t.Errorf("summaries asked %q", sums.asked)
	}
	said.Reset()
	sums.err = errors.New("projection file unreadable")
	got = open(t.Context(), loop.Opening{Conversation: "web-03", Agent: "master", Channel: "web", Text: "later"})
	if got.Notes == nil || strings.Contains(got.Notes.Text, "Previous conversation") || !strings.Contains(got.Notes.Text, "Today's notes") {
		t.Errorf("with the summary unread: %+v", got.Notes)
	}
	if !strings.Contains(said.String(), "previous conversation not read") {
		t.Errorf("said %s", said.String())
	}
	// A crew without a summaries read model tells no previous conversation.
	alone := notes.New(notes.Config{Crew: loop.Agents{"master": {ID: "master", Dir: dir}}, Location: time.UTC})
	if n := alone(t.Context(), first).Notes; n == nil || strings.Contains(n.Text, "Previous conversation") {
		t.Errorf("without summaries: %+v", n)
	}
}
