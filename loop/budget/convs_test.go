package budget_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/loop/llm"
)

// The ledger keeps the spend of at most ConvsInMemory conversations: after
// N+1 conversations it holds N, and one it let go still cannot pass its
// cap (or its parent's) when it comes back — its spend is read from the
// log, in the process that let it go and in one opened on the same log.
func TestBudgetConversationSpendStaysAtItsBound(t *testing.T) {
	_, log := eventstest.Start(t)
	const bound = 3
	openBounded := func() *budget.Ledger {
		t.Helper()
		l, err := budget.Open(t.Context(), budget.Config{Log: log, Location: time.UTC, NewID: newID, Catalog: catalog(),
			Clock: func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }, ConvsInMemory: bound})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := openBounded()
	m := &countingModel{cost: usd(0.01)}
	calls := func(l *budget.Ledger) func(p llm.Payer) error {
		mdl, _ := l.Models(llm.ModelsFunc(func(string) (llm.Model, error) { return m, nil })).Model(priced)
		return func(p llm.Payer) error {
			_, err := mdl.Call(t.Context(), pay(p))
			return err
		}
	}
	call := calls(l)
	capped := llm.Payer{Agent: "master", Conversation: "web-capped", CapUSD: 0.025}
	parent := llm.Payer{Agent: "master", Conversation: "web-parent", CapUSD: 0.025}
	child := llm.Payer{Agent: "coach", Conversation: "web-parent-d-1", Ancestors: []string{"web-parent"}}
	for _, p := range []llm.Payer{parent, child, capped, capped} {
		if err := call(p); err != nil {
			t.Fatal(err)
		}
	}
	for i := range bound + 1 {
		if err := call(llm.Payer{Agent: "master", Conversation: fmt.Sprintf("web-other-%d", i)}); err != nil {
			t.Fatal(err)
		}
		if n := budget.ConvsHeld(l); n > bound {
			t.Fatalf("after %d more conversations the ledger holds %d, bound %d", i+1, n, bound)
		}
	}
	refused := func(call func(llm.Payer) error, p llm.Payer, budgetName, spent string) {
		t.Helper()
		var r *budget.Refusal
		if err := call(p); !errors.As(err, &r) || r.Budget != budgetName || !strings.Contains(r.Sentence, spent) {
			t.Fatalf("%s, let go and back: %v, want refused on its %s budget, saying %q", p.Conversation, err, budgetName, spent)
		}
	}
	refused(call, capped, "conversation", "$0.02 spent")
	refused(call, child, "parent", "$0.02 spent")
	if n := budget.ConvsHeld(l); n > bound {
		t.Fatalf("the ledger holds %d, bound %d", n, bound)
	}
	// A ledger opened on the same log folds every conversation and keeps
	// the bound while it does.
	again := openBounded()
	if n := budget.ConvsHeld(again); n > bound {
		t.Fatalf("a reopened ledger holds %d, bound %d", n, bound)
	}
	refused(calls(again), capped, "conversation", "$0.02 spent")
	// A new conversation starts at nothing spent.
	if err := calls(again)(llm.Payer{Agent: "master", Conversation: "web-new", CapUSD: 0.015}); err != nil {
		t.Fatalf("a new conversation's first cent: %v", err)
	}
	if got, want := m.calls.Load(), int32(4+bound+1+1); got != want {
		t.Fatalf("%d calls went out, want %d", got, want)
	}
}

// The ledger keeps the day sums of the last daysKept (7) days: after N+1
// days of calls it holds 7 days, the crew's and each agent's, in the
// process that ran them and in one opened on the same log; today's cap
// still refuses the call that would pass it.
func TestBudgetDaySumsStayAtTheirBound(t *testing.T) {
	_, log := eventstest.Start(t)
	const kept, days = 7, 10
	day := 0
	clock := func() time.Time { return time.Date(2026, 12, 1+day, 9, 0, 0, 0, time.UTC) }
	openAt := func() *budget.Ledger {
		t.Helper()
		l, err := budget.Open(t.Context(), budget.Config{Log: log, Location: time.UTC, NewID: newID, Catalog: catalog(), Clock: clock,
			Caps: func() budget.Caps { return budget.Caps{AgentDailyUSD: map[string]float64{"coach": 0.025}} }})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := openAt()
	m := &countingModel{cost: usd(0.01)}
	mdl, _ := l.Models(llm.ModelsFunc(func(string) (llm.Model, error) { return m, nil })).Model(priced)
	for day = range days {
		for _, agent := range []string{"master", "coach"} {
			if _, err := mdl.Call(t.Context(), pay(llm.Payer{Agent: agent, Conversation: fmt.Sprintf("web-%s-%d", agent, day)})); err != nil {
				t.Fatalf("day %d, %s: %v", day, agent, err)
			}
		}
		if g, a := budget.DaysHeld(l); g > kept || a > 2*kept {
			t.Fatalf("after %d days the ledger holds %d days of the crew's sums and %d of the agents', bound %d", day+1, g, a, kept)
		}
	}
	if g, a := budget.DaysHeld(l); g != kept || a != 2*kept {
		t.Fatalf("after %d days: %d and %d day sums held, want %d and %d", days, g, a, kept, 2*kept)
	}
	if got := l.Today(); got.GlobalUSD < 0.019 || got.Agents["coach"] < 0.009 {
		t.Fatalf("today's spend after the old days went: %+v, want $0.02 for the crew, $0.01 for coach", got)
	}
	// Today's cap still decides: coach spent $0.01 of $0.025, a second
	// cent passes, a third's worst case does not.
	if _, err := mdl.Call(t.Context(), pay(llm.Payer{Agent: "coach", Conversation: "web-coach-more"})); err != nil {
		t.Fatalf("coach's second cent today: %v", err)
	}
	var r *budget.Refusal
	if _, err := mdl.Call(t.Context(), pay(llm.Payer{Agent: "coach", Conversation: "web-coach-more"})); !errors.As(err, &r) || r.Budget != "agent_day" {
		t.Fatalf("coach past today's cap: %v, want refused on its agent_day budget", err)
	}
	again := openAt()
	if g, a := budget.DaysHeld(again); g != kept || a != 2*kept {
		t.Fatalf("a reopened ledger holds %d and %d day sums, want %d and %d", g, a, kept, 2*kept)
	}
}
