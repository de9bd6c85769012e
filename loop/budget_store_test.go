package loop_test

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop/budget"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
)

// reserveFailsOnce is the real log whose at-th budget_reserved append
// (the first when at is 0) fails as a stream without a leader answers (a
// NATS leader kill), with nothing stored.
type reserveFailsOnce struct {
	*events.Log
	at       int32
	reserves atomic.Int32
	failed   atomic.Bool
}

func (l *reserveFailsOnce) Append(ctx context.Context, scope events.Scope, expect uint64, envs ...events.Envelope) ([]events.Envelope, error) {
	if scope == events.BudgetScope && len(envs) > 0 && envs[0].Type == events.TypeBudgetReserved && l.reserves.Add(1) >= max(l.at, 1) && l.failed.CompareAndSwap(false, true) {
		return nil, &events.StoreError{Kind: events.ErrStoreUnavailable, Err: nats.ErrNoResponders}
	}
	return l.Log.Append(ctx, scope, expect, envs...)
}

// The budget ledger failing to store a reservation is the store's failure,
// not the model's: nothing accepted is lost. The pass fails, the worker
// runs it again, and the run finishes done, answered once, with one
// reservation, settled (the TestClusterFailover flake: a run failed
// "model_error" without the model being asked).
func TestBudgetStoreFailureRetriesThePassNotFailsTheRun(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {costs(say("answered"), 0.01), say("asked twice")}})
	store := &reserveFailsOnce{Log: h.log}
	l, err := budget.Open(t.Context(), budget.Config{Log: store, Location: time.UTC, Clock: func() time.Time { return h.now }, NewID: nuid.Next,
		Catalog: llm.NewCatalog(nil)})
	if err != nil {
		t.Fatal(err)
	}
	h.deps.Models = l.Models(h.deps.Models)
	h.send("hi")
	w := h.startWorker(func(int) time.Duration { return 10 * time.Millisecond })
	waitFor(t, "the run finished", func() bool { return len(eventsOf[*events.RunFinished](h.events())) > 0 })
	waitFor(t, "idle", w.Idle)
	evs := h.events()
	if f := lastFinish(t, evs); f.Status != events.RunDone {
		t.Fatalf("finish = %+v, want done", f)
	}
	if !store.failed.Load() {
		t.Fatal("the reservation's append never failed: the test tested nothing")
	}
	if n, sent := len(eventsOf[*events.RunFinished](evs)), h.models["fake:a"].calls(); n != 1 || sent != 1 {
		t.Errorf("%d runs finished, %d calls sent; want 1 and 1", n, sent)
	}
	if mcs := eventsOf[*events.ModelCalled](evs); len(mcs) != 1 || mcs[0].Error != "" || mcs[0].Text != "answered" {
		t.Errorf("model_called = %+v, want one, answered", mcs)
	}
	if st := w.Stats(); st.FailedPasses != 1 {
		t.Errorf("failed passes = %d, want 1 (the store's failure, retried)", st.FailedPasses)
	}
	reserved, settled := budgetEvents(t, h.log)
	if reserved != 1 || settled != 1 || l.OpenReservations() != 0 {
		t.Errorf("%d reserved, %d settled, %d open; want 1, 1, 0", reserved, settled, l.OpenReservations())
	}
	if got := l.Today().GlobalUSD; math.Abs(got-0.01) > 1e-9 {
		t.Errorf("spent %v, want the call's 0.01", got)
	}
}

// The same from inside a tool: image_read's vision call whose reservation
// cannot be stored never left, so the store failed, not the tool. The
// pass fails, the worker runs it again, image_read is run again (not
// closed as interrupted, nor told to the model as a tool error) and the
// run finishes done, the image described once.
func TestBudgetStoreFailureInAToolRetriesThePass(t *testing.T) {
	h := newHarness(t, nil)
	models, _ := scripted(t, h, [][2]string{
		{"fake:a", "- tool_calls: [{name: image_read, arguments: {path: inbox/meal.jpg}}]\n- text: Bữa ăn có phở.\n"},
		{"fake:eye", "- text: 'A bowl of phở with beef.'\n- text: 'described twice'\n"},
	})
	h.agent.Routes = []string{"fake:a"}
	h.agent.VisionRoutes = []string{"fake:eye"}
	h.agent.Tools = append(h.agent.Tools, "image_read")
	writePhoto(t, h.agent.Workspace, "inbox/meal.jpg")
	store := &reserveFailsOnce{Log: h.log, at: 2} // the first is the step's, the second the vision call's
	l, err := budget.Open(t.Context(), budget.Config{Log: store, Location: time.UTC, Clock: func() time.Time { return h.now }, NewID: nuid.Next,
		Catalog: llm.NewCatalog(nil)})
	if err != nil {
		t.Fatal(err)
	}
	h.deps.Models = l.Models(h.deps.Models)
	h.send("ăn gì?")
	w := h.startWorker(func(int) time.Duration { return 10 * time.Millisecond })
	waitFor(t, "the run finished", func() bool { return len(eventsOf[*events.RunFinished](h.events())) > 0 })
	waitFor(t, "idle", w.Idle)
	evs := h.events()
	if !store.failed.Load() {
		t.Fatal("the vision call's reservation never failed: the test tested nothing")
	}
	if f := lastFinish(t, evs); f.Status != events.RunDone {
		t.Fatalf("finish = %+v, want done", f)
	}
	if st := w.Stats(); st.FailedPasses != 1 {
		t.Errorf("failed passes = %d, want 1 (the store's failure, retried)", st.FailedPasses)
	}
	var results []*events.ToolCompleted
	for _, c := range eventsOf[*events.ToolCompleted](evs) {
		if c.Tool == "image_read" {
			results = append(results, c)
		}
	}
	if len(results) != 1 || results[0].IsError || !strings.Contains(results[0].Output, "A bowl of phở with beef.") {
		t.Fatalf("image_read results = %+v, want one, the description", results)
	}
	if n := len(models["fake:eye"].msgs); n != 1 {
		t.Errorf("%d vision calls sent, want 1", n)
	}
	var vision []*events.ModelCalled
	for _, mc := range eventsOf[*events.ModelCalled](evs) {
		if mc.Purpose == events.PurposeVision {
			vision = append(vision, mc)
		}
	}
	if len(vision) != 1 || vision[0].Error != "" {
		t.Errorf("vision model_called = %+v, want one, answered (none for the call that never left)", vision)
	}
	if n := len(eventsOf[*events.RunFinished](evs)); n != 1 {
		t.Errorf("%d runs finished, want 1", n)
	}
	reserved, settled := budgetEvents(t, h.log)
	if reserved != 3 || settled != 3 || l.OpenReservations() != 0 {
		t.Errorf("%d reserved, %d settled, %d open; want 3, 3, 0", reserved, settled, l.OpenReservations())
	}
}

// A real refusal is no store failure: the run halts on the budget at
// once, the pass is not failed or retried, and nothing is sent.
func TestBudgetRefusalThroughTheWorkerHaltsNotRetries(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {say("never sent")}})
	l, err := budget.Open(t.Context(), budget.Config{Log: h.log, Location: time.UTC, Clock: func() time.Time { return h.now }, NewID: nuid.Next,
		Catalog: llm.NewCatalog(nil), Caps: func() budget.Caps { return budget.Caps{DailyUSD: 0.01} }}) // unknown price reserves $0.05
	if err != nil {
		t.Fatal(err)
	}
	h.deps.Models = l.Models(h.deps.Models)
	h.send("hi")
	w := h.startWorker(func(int) time.Duration { return 10 * time.Millisecond })
	waitFor(t, "the run finished", func() bool { return len(eventsOf[*events.RunFinished](h.events())) > 0 })
	waitFor(t, "idle", w.Idle)
	if f := lastFinish(t, h.events()); f.Status != events.RunHalted || f.Reason != "budget" {
		t.Fatalf("finish = %+v, want halted on the budget", f)
	}
	if st := w.Stats(); st.FailedPasses != 0 || h.models["fake:a"].calls() != 0 {
		t.Errorf("failed passes %d, calls sent %d; want 0 and 0", st.FailedPasses, h.models["fake:a"].calls())
	}
}

// budgetEvents counts the reservations and settlements stored, those
// carried by a later reservation included.
func budgetEvents(t *testing.T, log *events.Log) (reserved, settled int) {
	t.Helper()
	envs, err := log.ReadAll(t.Context(), events.BudgetScope.Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range envs {
		e, err := env.Decode()
		if err != nil {
			t.Fatal(err)
		}
		switch e := e.(type) {
		case *events.BudgetReserved:
			reserved++
			settled += len(e.Settles)
		case *events.BudgetSettled:
			settled++
		}
	}
	return reserved, settled
}

// A script's llm.* question whose reservation cannot be stored never left
// either: no model_called, and the script is told the store failed, not
// the model, so it may ask again; the pass goes on (failing it would close
// the whole script as interrupted: a script is never run twice).
func TestBudgetStoreFailureOfAScriptQuestionIsToldToTheScript(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {
		scriptCall("c = llm.classify(\"the file\", [\"file\", \"dir\"])\nprint(c.get(\"error\"))"),
		say("done"),
	}}, &counter{name: "reader", out: "the file"}) // a script is offered with a tool to call
	h.deps.HomeDir = t.TempDir()
	store := &reserveFailsOnce{Log: h.log, at: 2} // the first is the step's, the second the question's
	l, err := budget.Open(t.Context(), budget.Config{Log: store, Location: time.UTC, Clock: func() time.Time { return h.now }, NewID: nuid.Next,
		Catalog: llm.NewCatalog(nil)})
	if err != nil {
		t.Fatal(err)
	}
	h.deps.Models = l.Models(h.deps.Models)
	h.send("go")
	h.turn()
	evs := h.events()
	if !store.failed.Load() {
		t.Fatal("the question's reservation never failed: the test tested nothing")
	}
	if f := lastFinish(t, evs); f.Status != events.RunDone {
		t.Fatalf("finish = %+v, want done", f)
	}
	done := eventsOf[*events.ToolCompleted](evs)
	if len(done) != 1 || !strings.Contains(done[0].Output, "the model was not asked: the event store could not record its budget reservation") {
		t.Fatalf("tool_script results = %+v, want the store's failure told", done)
	}
	for _, mc := range eventsOf[*events.ModelCalled](evs) {
		if mc.Purpose == events.PurposeScript {
			t.Errorf("a model_called for the question that never left: %+v", mc)
		}
	}
	if n := h.models["fake:a"].calls(); n != 2 {
		t.Errorf("%d calls sent, want the two steps", n)
	}
}
