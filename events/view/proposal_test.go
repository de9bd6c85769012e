package view_test

import (
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/view"
)

// A proposal as crew memory consolidate prints it: what was filed, how to
// decide a waiting one or undo an applied one, then the diff.
func TestProposalWrite(t *testing.T) {
	p := view.Proposal{ProposalRecord: events.ProposalRecord{ID: "p1", Agent: "master", Kind: events.ProposalAddOnly,
		Reason: "two new facts", Status: events.ProposalPending}, Added: 1, Removed: 0,
		Diff: view.Diff("# Memory\n", "# Memory\n- Trains for a marathon.\n")}
	var b strings.Builder
	p.Write(&b)
	want := "proposal p1 for master: add_only (+1 −0)\n  two new facts\n" +
		"waits for you: Approve or Reject on /memory, or POST /api/memory/proposals/p1 {\"decision\":\"approve\"}\n\n" +
		"  # Memory\n+ - Trains for a marathon.\n"
	if b.String() != want {
		t.Errorf("pending:\n%q\nwant\n%q", b.String(), want)
	}
	p.Status, p.Reason, p.Diff = events.ProposalApplied, "", nil
	b.Reset()
	p.Write(&b)
	want = "proposal p1 for master: add_only (+1 −0)\napplied to MEMORY.md; to undo: POST /api/memory/proposals/p1/rollback, or Roll back on /memory\n\n"
	if b.String() != want {
		t.Errorf("applied:\n%q\nwant\n%q", b.String(), want)
	}
}
