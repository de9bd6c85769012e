package inbound_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/inbound"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/projections/projectionstest"
	"github.com/my-agent-crew/crew/tools"
)

// The doors of NewDoors share their parts: the doors by id find, through
// the projections (after reading their writes) and the worker, the
// conversation a message through Inbound opened, and each answers its own
// error for an id it does not know.
func TestDoorsByIDFindWhatInboundStored(t *testing.T) {
	ctx := t.Context()
	log, db, runner := projectionstest.Start(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("You are a test."), 0o600)
	reg, err := tools.New()
	if err != nil {
		t.Fatal(err)
	}
	crew := loop.Agents{"master": {ID: "master", Dir: dir, Workspace: dir, Routes: []string{"fake:echo"}, MaxSteps: 3,
		ToolOutputChars: 8000, ApprovalTTL: time.Minute}}
	deps := loop.Deps{Models: llm.ModelsFunc(func(string) (llm.Model, error) { return llm.Echo{}, nil }), Tools: reg,
		Clock: loop.WallClock{}, HomeDir: t.TempDir(), Crew: crew}
	convs := loop.NewConvs(log, nil)
	w, err := loop.StartWorker(ctx, loop.WorkerConfig{Log: log, Convs: convs, Deps: deps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	d := inbound.NewDoors(&inbound.Inbound{Convs: convs, Kick: w, Master: "master", Crew: crew},
		inbound.ByID{Log: log, DB: db, Fresh: runner, Worker: w})

	acc, err := d.Inbound.Receive(ctx, inbound.Message{Text: "hi", Channel: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if cur, err := d.Inbound.Current(ctx, "", "web"); cur != acc.ConversationID || err != nil {
		t.Errorf("Current of agent \"\" (the master) = %q, %v; want %s", cur, err, acc.ConversationID)
	}
	// Found at once (read your writes): stopped if its turn still runs,
	// else nothing to stop; once the turn is over, nothing to stop.
	if _, err := d.Stops.Stop(ctx, acc.ConversationID, events.StopAll, events.StopByWeb); err != nil && !errors.Is(err, loop.ErrNothingRunning) {
		t.Fatalf("stop %s: %v", acc.ConversationID, err)
	}
	eventstest.Eventually(t, "nothing left to stop", func() bool {
		_, err := d.Stops.Stop(ctx, acc.ConversationID, events.StopAll, events.StopByWeb)
		return errors.Is(err, loop.ErrNothingRunning)
	})
	if _, err := d.Stops.Stop(ctx, "web-19990101", events.StopAll, events.StopByWeb); !errors.Is(err, inbound.ErrUnknownConversation) {
		t.Errorf("stop of an unknown conversation: %v, want ErrUnknownConversation", err)
	}
	if _, err := d.Approvals.Decide(ctx, "a1", true, false, "web"); !errors.Is(err, loop.ErrUnknownApproval) {
		t.Errorf("decide an unknown approval: %v, want loop.ErrUnknownApproval", err)
	}
	if err := d.Questions.Answer(ctx, "q1", "yes", "web"); !errors.Is(err, loop.ErrUnknownQuestion) {
		t.Errorf("answer an unknown question: %v, want loop.ErrUnknownQuestion", err)
	}
	if got, err := d.Questions.Outcome(ctx, events.CardApproval, "a1"); got != "" || err != nil {
		t.Errorf("outcome of an unknown approval = %q, %v; want \"\", nil", got, err)
	}
}
