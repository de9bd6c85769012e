package projections_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/projections"
	"github.com/my-agent-crew/crew/projections/projectionstest"
)

// countingFresh counts the waits asked of it.
type countingFresh struct{ waits int }

func (f *countingFresh) WaitFor(context.Context, uint64) error { f.waits++; return nil }

// A Reader's read right after an append sees it (the live batch may
// still hold it); one that says NoWait asks for no wait.
func TestReaderReadsWhatWasStoredBeforeIt(t *testing.T) {
	log, db, runner := projectionstest.Start(t)
	read := projections.Reader{DB: db, Log: log, Fresh: runner}
	for i := 1; i <= 3; i++ {
		if _, err := log.Append(t.Context(), events.Conv(fmt.Sprintf("c%d", i)), 0,
			events.MustNew(&events.ConversationOpened{Agent: "pong", Channel: "api"}),
			events.MustNew(&events.RunStarted{RunID: fmt.Sprintf("r%d", i), Agent: "pong", Trigger: "message"})); err != nil {
			t.Fatal(err)
		}
		list, err := read.Conversations(t.Context(), 0)
		if err != nil || len(list) != i {
			t.Errorf("Conversations right after the %d-th opened: %d listed (%v)", i, len(list), err)
		}
		running, _, _, err := read.Overview(t.Context())
		if err != nil || len(running) != i {
			t.Errorf("Overview right after the %d-th started: running %v (%v)", i, running, err)
		}
	}
	f := &countingFresh{}
	read = projections.Reader{DB: db, Log: log, Fresh: f}
	read.Activity(t.Context(), 5)
	read.Applied(t.Context(), 1)
	read.NoWait = true
	read.MemoryWrites(t.Context(), "", true, 5)
	read.Conversations(t.Context(), 5)
	read.Applied(t.Context(), 1)
	if f.waits != 2 {
		t.Errorf("%d waits asked, want 2 (Activity, Applied): NoWait still waited", f.waits)
	}
}
