package loop_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
)

// startWorker starts a worker over the harness's conversation as a fresh
// process would: new writers, and a recovery scan that finds c1.
func (h *harness) startWorker(retry func(n int) time.Duration) *loop.Worker {
	h.t.Helper()
	h.convs = loop.NewConvs(h.log, nil)
	w, err := loop.StartWorker(h.t.Context(), loop.WorkerConfig{
		Log: h.log, Convs: h.convs, Deps: h.deps, SweepEvery: -1, RetryDelay: retry,
		Recover: func(context.Context) ([]string, error) { return []string{h.conv}, nil },
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(w.Close)
	return w
}

// waitFor polls (bounded) until ok.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("never %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling, with a deadline
	}
}

func TestRetryDelayDoublesToThirtySeconds(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i, w := range want {
		if got := loop.RetryDelay(i + 1); got != w {
			t.Errorf("RetryDelay(%d) = %s, want %s", i+1, got, w)
		}
	}
	if got := loop.RetryDelay(1000); got != 30*time.Second {
		t.Errorf("RetryDelay(1000) = %s", got)
	}
}

// Issue 10 item 7 (R-X-4): a pass that fails is retried after a growing
// pause; the third failure in a row finishes the run failed ("poisoned",
// with the error), and nothing retries it until a new message comes.
func TestPoisonedTurnBacksOffAndFails(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {say("answered at last")}})
	// An AGENTS.md the turn cannot read fails every pass before any model
	// call.
	agents := filepath.Join(h.agent.Dir, "AGENTS.md")
	os.Remove(agents)
	if err := os.Mkdir(agents, 0o700); err != nil {
		t.Fatal(err)
	}
	h.send("hello")
	var mu sync.Mutex
	var delays []int
	w := h.startWorker(func(n int) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		delays = append(delays, n)
		return 20 * time.Millisecond
	})
	waitFor(t, "the run finished", func() bool { return len(eventsOf[*events.RunFinished](h.events())) > 0 })
	f := lastFinish(t, h.events())
	if f.Status != events.RunFailed || f.Reason != loop.ReasonPoisoned || !strings.Contains(f.Error, "failed 3 times in a row") || !strings.Contains(f.Error, "AGENTS.md") {
		t.Errorf("finish = %+v, want failed, poisoned, with the count and the error", f)
	}
	mu.Lock()
	if got := delays; len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("retry pauses asked for failures %v, want [1 2] (then closed)", got)
	}
	mu.Unlock()
	// Not retried: no pass runs or waits to retry, and nothing was
	// appended after the close.
	waitFor(t, "idle", w.Idle)
	if evs := h.events(); len(eventsOf[*events.RunFinished](evs)) != 1 {
		t.Errorf("the run was closed more than once")
	} else if _, ok := evs[len(evs)-1].(*events.RunFinished); !ok {
		t.Errorf("events appended after the run was closed: last %T", evs[len(evs)-1])
	}
	mu.Lock()
	if len(delays) != 2 {
		t.Errorf("retried after closing: pauses %v", delays)
	}
	mu.Unlock()
	if st := h.state(); st.OpenRun != "" || st.NeedsTurn() {
		t.Errorf("open run %q, needs turn %v after poisoning", st.OpenRun, st.NeedsTurn())
	}
	if h.models["fake:a"].calls() != 0 {
		t.Error("the model was called")
	}
	// A new message is a new run: with the cause fixed it is answered.
	os.Remove(agents)
	os.WriteFile(agents, []byte("You are the test agent."), 0o600)
	h.send("again")
	w = h.startWorker(nil)
	w.Kick(h.conv)
	waitFor(t, "the new message answered", func() bool { return lastFinish(t, h.events()).Status == events.RunDone })
}

// The retry timer belongs to the worker: Close stops it instead of leaving
// it to fire into a stopped worker.
func TestRetryTimerStoppedOnClose(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {say("x")}})
	agents := filepath.Join(h.agent.Dir, "AGENTS.md")
	os.Remove(agents)
	os.Mkdir(agents, 0o700)
	h.send("hello")
	asked := make(chan struct{}, 1)
	w := h.startWorker(func(int) time.Duration {
		asked <- struct{}{}
		return time.Hour
	})
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("no retry was scheduled")
	}
	closed := make(chan struct{})
	go func() { w.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for an hour-long retry timer")
	}
}

// Issue 10 item 7: a conversation whose log holds an event this build
// cannot decode (a newer version) is parked: named with the event's
// subject and sequence, not retried, nothing appended.
func TestUndecodableConversationParked(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {say("x")}})
	h.send("hello")
	subject := events.Conv(h.conv).Subject(events.TypeRunStarted)
	ack, err := h.log.JetStream().Publish(h.t.Context(), subject,
		[]byte(`{"type":"run_started","v":9,"id":"future1","time":"2026-11-30T09:00:00Z","data":{"run_id":"r9","agent":"master","trigger":"message"}}`))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	var mu sync.Mutex
	w := h.startWorker(func(int) time.Duration {
		mu.Lock()
		calls++
		mu.Unlock()
		return time.Millisecond
	})
	waitFor(t, "parked", func() bool { _, ok := w.Parked(h.conv); return ok })
	p, _ := w.Parked(h.conv)
	if p.Subject != subject || p.Seq != ack.Sequence || !strings.Contains(p.Error, "version") {
		t.Errorf("parked = %+v, want %s seq %d and the decode error", p, subject, ack.Sequence)
	}
	w.Kick(h.conv) // a kick (a new message's) parks it again, no more
	waitFor(t, "idle", w.Idle)
	mu.Lock()
	if calls != 0 {
		t.Errorf("a parked conversation was retried %d times", calls)
	}
	mu.Unlock()
	last, _ := h.log.Last(h.t.Context(), events.Conv(h.conv).Filter())
	if last != ack.Sequence {
		t.Errorf("events appended after the undecodable one: last seq %d, want %d", last, ack.Sequence)
	}
}

// hangModel blocks every call until the call's context ends: the server
// dies while the model writes.
type hangModel struct {
	mu    sync.Mutex
	calls int
	in    chan struct{}
}

func (m *hangModel) Call(ctx context.Context, _ llm.Request) (llm.Reply, error) {
	m.mu.Lock()
	m.calls++
	m.mu.Unlock()
	m.in <- struct{}{}
	<-ctx.Done()
	return llm.Reply{}, ctx.Err()
}

// Issue 10 item 13 (R-X-4): a run cut by a restart is resumed once
// (run_resumed); cut again, it is closed as interrupted, with a reason,
// every call answered, and not resumed a third time.
func TestRunInterruptedTwiceIsClosed(t *testing.T) {
	tool := &counter{name: "lookup"}
	h := newHarness(t, map[string][]reply{"fake:a": nil}, tool)
	hang := &hangModel{in: make(chan struct{}, 4)}
	h.deps.Models = llm.ModelsFunc(func(string) (llm.Model, error) { return hang, nil })
	h.send("look it up")
	call := events.ToolCallRequest{ID: "k1", Name: "lookup", Arguments: json.RawMessage(`{}`)}
	h.append(&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"})
	h.append(&events.ModelCalled{RunID: "r1", Step: 1, Route: "fake:a", Model: "a", ToolCalls: []events.ToolCallRequest{call}})
	h.append(&events.ToolCalled{RunID: "r1", Step: 1, CallID: "k1", Tool: "lookup", Arguments: call.Arguments})
	// First crash was here. The restarted worker resumes the run once...
	w := h.startWorker(nil)
	select {
	case <-hang.in:
	case <-time.After(10 * time.Second):
		t.Fatal("the resumed run never called the model")
	}
	w.Close() // ...and the server dies again while the model writes.
	if n := len(eventsOf[*events.RunResumed](h.events())); n != 1 {
		t.Fatalf("%d run_resumed after the first restart, want 1", n)
	}
	// The second restart closes it.
	w = h.startWorker(nil)
	waitFor(t, "the run closed", func() bool { return len(eventsOf[*events.RunFinished](h.events())) > 0 })
	waitFor(t, "idle", w.Idle)
	evs := h.events()
	f := lastFinish(t, evs)
	if f.RunID != "r1" || f.Status != events.RunFailed || f.Reason != loop.ReasonInterrupted || !strings.Contains(f.Error, "stopped 2 times") {
		t.Errorf("finish = %+v, want r1 failed, interrupted, saying why", f)
	}
	if n := len(eventsOf[*events.RunResumed](evs)); n != 1 {
		t.Errorf("%d run_resumed, want 1 (not resumed a third time)", n)
	}
	hang.mu.Lock()
	if hang.calls != 1 {
		t.Errorf("model called %d times, want 1 (none after the second restart)", hang.calls)
	}
	hang.mu.Unlock()
	if tool.runs.Load() != 0 {
		t.Error("the interrupted call was run")
	}
	if st := h.state(); st.OpenRun != "" || len(st.UnansweredCalls()) != 0 {
		t.Errorf("open run %q, unanswered %v", st.OpenRun, st.UnansweredCalls())
	}
	// A third start finds nothing to do.
	n := len(evs)
	w.Close()
	w = h.startWorker(nil)
	waitFor(t, "idle", w.Idle)
	if got := len(h.events()); got != n {
		t.Errorf("a third start appended %d events", got-n)
	}
}

// A run paused on an approval is not working: restarts while it waits are
// not interruptions, and the approval still runs the call afterwards.
func TestRestartWhileAwaitingApprovalIsNotAnInterruption(t *testing.T) {
	tool := &counter{name: "shell_run", write: true}
	h := newHarness(t, map[string][]reply{"fake:a": {use("shell_run", `{"command":"ls"}`), say("done")}}, tool)
	h.send("list")
	w := h.startWorker(nil)
	w.Kick(h.conv)
	var approval string
	waitFor(t, "awaiting approval", func() bool {
		if p := h.state().PendingApproval(); p != nil {
			approval = p.ID
			return true
		}
		return false
	})
	for range 3 {
		w.Close()
		w = h.startWorker(nil)
		waitFor(t, "idle", w.Idle)
	}
	if n := len(eventsOf[*events.RunResumed](h.events())); n != 0 {
		t.Errorf("%d run_resumed while the run waited for approval, want 0", n)
	}
	if _, err := w.Decide(h.t.Context(), h.conv, approval, true, false, "web"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "done", func() bool {
		fs := eventsOf[*events.RunFinished](h.events())
		return len(fs) > 0 && fs[len(fs)-1].Status == events.RunDone
	})
	if tool.runs.Load() != 1 {
		t.Errorf("tool ran %d times, want 1", tool.runs.Load())
	}
}

// panicModel panics on every call.
type panicModel struct{ calls atomicCount }

type atomicCount struct {
	mu sync.Mutex
	n  int
}

func (c *atomicCount) add() { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *atomicCount) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (m *panicModel) Call(context.Context, llm.Request) (llm.Reply, error) {
	m.calls.add()
	panic("provider bug")
}

// R-X-4: a turn that panics is a failed pass, not a dead server: retried
// with the same back-off, then closed as poisoned with the panic named.
func TestPanickingTurnIsPoisonedNotFatal(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": nil})
	m := &panicModel{}
	h.deps.Models = llm.ModelsFunc(func(string) (llm.Model, error) { return m, nil })
	h.send("hello")
	h.startWorker(func(int) time.Duration { return 10 * time.Millisecond })
	waitFor(t, "the run finished", func() bool { return len(eventsOf[*events.RunFinished](h.events())) > 0 })
	f := lastFinish(t, h.events())
	if f.Status != events.RunFailed || f.Reason != loop.ReasonPoisoned || !strings.Contains(f.Error, "panicked: provider bug") {
		t.Errorf("finish = %+v, want failed, poisoned, naming the panic", f)
	}
	if n := m.calls.get(); n != loop.MaxFailedPasses {
		t.Errorf("model called %d times, want %d", n, loop.MaxFailedPasses)
	}
}
