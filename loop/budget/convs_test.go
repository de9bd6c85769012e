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
