package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
)

// killer is a tool that cancels the pass running it on chosen runs: the
// turn is killed right after the call's result is recorded.
type killer struct {
	counter
	killOn map[int32]bool
	cancel context.CancelFunc
}

func (k *killer) Run(ctx context.Context, env tools.Env, args json.RawMessage) (tools.Result, error) {
	res, err := k.counter.Run(ctx, env, args)
	if k.killOn[k.runs.Load()] && k.cancel != nil {
		k.cancel()
	}
	return res, err
}

// passes runs turns on h until the run finishes, each with its own
// context, as a worker restarted after each kill would; it returns how
// many passes were killed.
func (h *harness) passes(k *killer) (killed int) {
	h.t.Helper()
	for range 10 {
		conv, err := h.convs.Get(h.t.Context(), h.conv)
		if err != nil {
			h.t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(h.t.Context())
		if k != nil {
			k.cancel = cancel
		}
		err = loop.NewTurn(h.agent, h.deps, conv).Run(ctx)
		cancel()
		switch {
		case errors.Is(err, context.Canceled):
			killed++
			// A new process: the state is loaded again from the log.
			h.convs = loop.NewConvs(h.log, nil)
		case err != nil:
			h.t.Fatalf("turn: %v", err)
		default:
			return killed
		}
	}
	h.t.Fatal("the run did not finish in 10 passes")
	return killed
}

type guardOutcome struct {
	runs      int32
	reminders string
	halt      string
	refusal   string
}

func guardRun(t *testing.T, killOn ...int32) (guardOutcome, int) {
	tool := &killer{counter: counter{name: "shell_run"}, killOn: map[int32]bool{}}
	for _, n := range killOn {
		tool.killOn[n] = true
	}
	h := newHarness(t, map[string][]reply{"fake:a": repeat(use("shell_run", `{"command":"make"}`), 6)}, tool)
	h.deps.Models = llm.ModelsFunc(func(string) (llm.Model, error) { return ctxModel{h.models["fake:a"]}, nil })
	h.send("build it")
	killed := h.passes(tool)
	evs := h.events()
	var out guardOutcome
	out.runs = tool.runs.Load()
	for _, r := range eventsOf[*events.GuardReminded](evs) {
		out.reminders += fmt.Sprintf("step %d count %d %s; ", r.Step, r.Count, r.Tool)
	}
	f := lastFinish(t, evs)
	out.halt = fmt.Sprintf("%s/%s", f.Status, f.Reason)
	for _, r := range eventsOf[*events.ToolCompleted](evs) {
		if r.Outcome != "" {
			out.refusal += fmt.Sprintf("step %d %s; ", r.Step, r.Outcome)
		}
	}
	return out, killed
}

// R-LOOP-3 and R-ES-1: the guard's count is folded from the log, so a turn
// killed and resumed between the repeats reaches the same reminder and the
// same halt at the same step as an uninterrupted one.
func TestGuardCountsSurviveResume(t *testing.T) {
	want, killed := guardRun(t)
	if killed != 0 || want.runs != 5 || want.reminders != "step 3 count 3 shell_run; " || want.halt != "halted/loop" || want.refusal != "step 6 loop; " {
		t.Fatalf("uninterrupted run = %+v (killed %d)", want, killed)
	}
	for _, kills := range [][]int32{{3}, {4}, {5}, {2, 4}, {3, 4, 5}} {
		got, killed := guardRun(t, kills...)
		if killed != len(kills) {
			t.Errorf("kills after runs %v: %d passes were killed", kills, killed)
		}
		if got != want {
			t.Errorf("killed after runs %v: %+v, want %+v", kills, got, want)
		}
	}
}

// ctxModel answers nothing once its caller's context has ended, as a real
// provider's request would fail: a killed pass consumes no scripted reply.
type ctxModel struct{ *fakeModel }

func (m ctxModel) Call(ctx context.Context, req llm.Request) (llm.Reply, error) {
	if err := ctx.Err(); err != nil {
		return llm.Reply{}, err
	}
	return m.fakeModel.Call(ctx, req)
}

// cancelling is a model that kills the pass calling it, once.
type cancelling struct {
	*fakeModel
	cancel *context.CancelFunc
	done   bool
}

func (c *cancelling) Call(ctx context.Context, req llm.Request) (llm.Reply, error) {
	if !c.done && *c.cancel != nil {
		c.done = true
		(*c.cancel)()
		return llm.Reply{}, ctx.Err()
	}
	return c.fakeModel.Call(ctx, req)
}

// R-LOOP-4: escalation happens at most once per run, also when the turn is
// killed after escalating: the resumed pass starts on the agent's routes
// again and, failing there, does not escalate a second time.
func TestEscalationAtMostOnceAcrossResume(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {fail(500), fail(500)}, "fake:escalate": {say("never")}})
	h.agent.EscalationRoute = "fake:escalate"
	var cancel context.CancelFunc
	strong := &cancelling{fakeModel: h.models["fake:escalate"], cancel: &cancel}
	models := h.deps.Models
	h.deps.Models = llm.ModelsFunc(func(route string) (llm.Model, error) {
		if route == "fake:escalate" {
			return strong, nil
		}
		return models.Model(route)
	})
	h.send("hi")
	killed := 0
	for range 5 {
		conv, err := h.convs.Get(t.Context(), h.conv)
		if err != nil {
			t.Fatal(err)
		}
		ctx, c := context.WithCancel(t.Context())
		cancel = c
		err = loop.NewTurn(h.agent, h.deps, conv).Run(ctx)
		c()
		if errors.Is(err, context.Canceled) {
			killed++
			h.convs = loop.NewConvs(h.log, nil)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	evs := h.events()
	if killed != 1 {
		t.Fatalf("%d passes killed, want 1 (on the escalation route's call)", killed)
	}
	if n := len(eventsOf[*events.Escalated](evs)); n != 1 {
		t.Errorf("%d escalations across the resume, want 1", n)
	}
	if f := lastFinish(t, evs); f.Status != events.RunFailed {
		t.Errorf("finish = %+v, want failed (no second escalation)", f)
	}
	if st := h.state(); st.Escalated || st.Guard != (loop.Guard{}) {
		t.Errorf("after the run: escalated %v, guard %+v", st.Escalated, st.Guard)
	}
}

// R-LOOP-3: a pause for approval does not reset the guard: the same gated
// call approved three times in a row is reminded on the third, as it
// would be in an autonomous conversation.
func TestGuardCountsAcrossApprovalPauses(t *testing.T) {
	tool := &counter{name: "shell_run", write: true}
	h := newHarness(t, map[string][]reply{"fake:a": append(repeat(use("shell_run", `{"command":"make"}`), 3), say("stopping"))}, tool)
	h.send("build it")
	h.turn()
	for i := 0; i < 3; i++ {
		a := h.state().PendingApproval()
		if a == nil {
			t.Fatalf("no approval pending before call %d", i+1)
		}
		h.append(&events.ApprovalDecided{ApprovalID: a.ID, Decision: events.DecisionApproved})
		h.turn()
	}
	evs := h.events()
	rem := eventsOf[*events.GuardReminded](evs)
	if tool.runs.Load() != 3 || len(rem) != 1 || rem[0].Step != 3 || rem[0].Count != 3 {
		t.Fatalf("runs %d, reminders %+v; want 3 runs and one reminder at step 3", tool.runs.Load(), rem)
	}
	if f := lastFinish(t, evs); f.Status != events.RunDone {
		t.Errorf("finish = %+v", f)
	}
}
