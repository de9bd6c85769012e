package app

import (
	"log/slog"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// Every embedding call recall makes is a model_called of purpose embed in
// the usage ledger, the tenth as the first: the records of all of them share
// one subject, so none may be appended as if that subject were empty.
func TestEveryEmbeddingCallIsRecordedInTheUsageLedger(t *testing.T) {
	dir := t.TempDir()
	if _, err := home.Init(dir); err != nil {
		t.Fatal(err)
	}
	h, err := home.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, log := eventstest.Start(t)
	record := embedUsage(log, h, slog.New(slog.DiscardHandler))
	for range 3 {
		record(t.Context(), "ollama:nomic-embed-text", 4, 120, 5*time.Millisecond, nil)
	}
	envs, err := log.ReadAll(t.Context(), embedScope.Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, env := range envs {
		e, err := env.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if mc, ok := e.(*events.ModelCalled); ok && mc.Purpose == events.PurposeEmbed && mc.InputTokens == 120 {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d of 3 embedding calls recorded", n)
	}
}
