package telegram

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
)

// Bounded memory: strangers writing to the bot and delegated conversations
// followed for months do not grow the gateway's maps without end.
func TestTrackedMapsAreBounded(t *testing.T) {
	g := &Gateway{cfg: Config{Logger: slog.New(slog.DiscardHandler)}, allowed: map[int64]bool{42: true}, seen: map[int64]bool{}}
	for id := range int64(3 * maxTracked) {
		if g.admit(1000 + id) {
			t.Fatalf("stranger %d admitted", 1000+id)
		}
		if len(g.seen) > maxTracked {
			t.Fatalf("%d strangers remembered, want at most %d", len(g.seen), maxTracked)
		}
	}
	if !g.admit(42) {
		t.Fatal("the owner's chat refused")
	}
	children := map[string]int64{}
	open := func(conv string) {
		env := events.MustNew(&events.ConversationOpened{Agent: "chef", Channel: "delegate", RootID: "telegram-42-20261130"})
		env.Subject, env.Time = events.Conv(conv).Subject(env.Type), time.Now()
		g.applyChild(t.Context(), children, conv, env)
	}
	for i := range 3 * maxTracked {
		open(fmt.Sprintf("d%d", i))
		if len(children) > maxTracked {
			t.Fatalf("%d delegated conversations followed, want at most %d", len(children), maxTracked)
		}
	}
	closed := events.MustNew(&events.ConversationClosed{Reason: "done"})
	last := fmt.Sprintf("d%d", 3*maxTracked-1)
	closed.Subject = events.Conv(last).Subject(closed.Type)
	if _, ok := children[last]; !ok {
		t.Fatal("the newest delegated conversation is not followed")
	}
	g.applyChild(t.Context(), children, last, closed)
	if _, ok := children[last]; ok {
		t.Error("a closed delegated conversation is still followed")
	}
}
