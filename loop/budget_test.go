package loop_test

import (
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/nats-io/nuid"
)

// R-X-5: a model call that would pass a budget is not sent; the turn
// halts with reason budget and the chat says which budget in plain words.
// The second turn of the day is refused on the agent's daily cap; nothing
// is recorded as a model call for it.
func TestLoopBudgetRefusalHaltsTurnNamingTheBudget(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {costs(say("first"), 0.02), say("never sent")}})
	price := 10.0
	l, err := budget.Open(t.Context(), budget.Config{Log: h.log, Location: time.UTC, Clock: func() time.Time { return h.now }, NewID: nuid.Next,
		Catalog: llm.NewCatalog(map[string]llm.ModelOverride{"fake:a": {OutputUSDPerMTok: &price}}),
		Caps:    func() budget.Caps { return budget.Caps{AgentDailyUSD: map[string]float64{"master": 0.05}} }})
	if err != nil {
		t.Fatal(err)
	}
	h.deps.Models = l.Models(h.deps.Models) // worst case: 4,096 output tokens at $10/Mtok ≈ $0.041
	h.send("hi")
	h.turn()
	if f := lastFinish(t, h.events()); f.Status != events.RunDone {
		t.Fatalf("first turn: %+v", f)
	}
	h.send("again")
	h.turn()
	evs := h.events()
	f := lastFinish(t, evs)
	if f.Status != events.RunHalted || f.Reason != "budget" || !strings.HasPrefix(f.Error, "master's daily cap of $0.05 is reached") {
		t.Fatalf("second turn: %+v", f)
	}
	if n := len(eventsOf[*events.ModelCalled](evs)); n != 1 || len(h.models["fake:a"].seen) != 1 {
		t.Errorf("%d model calls recorded, %d sent; want 1 and 1", n, len(h.models["fake:a"].seen))
	}
	notice := loop.Ending{Status: f.Status, Reason: f.Reason, Error: f.Error}.Notice("")
	if !strings.Contains(notice, "master's daily cap of $0.05 is reached") || !strings.Contains(notice, "Nothing was sent") {
		t.Errorf("notice = %q", notice)
	}
}
