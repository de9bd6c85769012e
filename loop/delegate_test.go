package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/schemas"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/shell/shelltest"
)

// crew is a master and two agents it may delegate to, run by a real worker
// on a real log; each agent answers from its own scripted model.
type crew struct {
	t      *testing.T
	log    *events.Log
	agents map[string]loop.Agent
	deps   loop.Deps
	now    time.Time

	mu     sync.Mutex
	models map[string]llm.Model // by route "fake:<agent>"

	convs *loop.Convs
	w     *loop.Worker
	// inFlight is the worker's turns_in_flight (0: the default).
	inFlight int
}

func newCrew(t *testing.T, scripts map[string][]reply, ts ...tools.Tool) *crew {
	t.Helper()
	_, log := eventstest.Start(t)
	reg, err := tools.New(append(loop.Tools(), ts...)...)
	if err != nil {
		t.Fatal(err)
	}
	c := &crew{t: t, log: log, agents: map[string]loop.Agent{}, models: map[string]llm.Model{},
		now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	names := []string{"ask_user", "progress_note", loop.DelegateTool}
	for _, tl := range ts {
		names = append(names, tl.Def().Name)
	}
	for _, id := range []string{"master", "coach", "ledger"} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("You are the "+id+" persona."), 0o600)
		os.MkdirAll(filepath.Join(dir, "workspace"), 0o700)
		c.agents[id] = loop.Agent{ID: id, Dir: dir, Workspace: filepath.Join(dir, "workspace"), Routes: []string{"fake:" + id},
			Tools: names, MaxSteps: 12, CostCapUSD: 0.5, ToolOutputChars: 8000, ApprovalTTL: 10 * time.Minute}
		c.models["fake:"+id] = &fakeModel{route: "fake:" + id, replies: scripts[id]}
	}
	c.deps = loop.Deps{
		Models: llm.ModelsFunc(func(route string) (llm.Model, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if m, ok := c.models[route]; ok {
				return m, nil
			}
			return nil, fmt.Errorf("no route %s", route)
		}),
		Tools:    reg,
		Clock:    clockAt{now: func() time.Time { return c.now }},
		HomeDir:  t.TempDir(),
		Services: loop.Services{Sandbox: shelltest.New(t)},
	}
	return c
}

func (c *crew) model(agent string) *fakeModel {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.models["fake:"+agent].(*fakeModel)
}

// start starts a worker (a fresh process: new writers, cold state) whose
// recovery scan finds recover.
func (c *crew) withCrew() loop.Deps {
	d := c.deps
	d.Crew = loop.Agents(c.agents)
	return d
}

func (c *crew) start(recover ...string) {
	c.t.Helper()
	c.convs = loop.NewConvs(c.log, nil)
	w, err := loop.StartWorker(c.t.Context(), loop.WorkerConfig{
		Log: c.log, Convs: c.convs, Deps: c.withCrew(), SweepEvery: -1, TurnsInFlight: c.inFlight,
		Recover: func(context.Context) ([]string, error) { return recover, nil },
	})
	if err != nil {
		c.t.Fatal(err)
	}
	c.w = w
	c.t.Cleanup(w.Close)
}

// send opens conversation c1 of the master with a message; the worker's
// consumer picks it up.
func (c *crew) send(text string, opened ...events.ConversationOpened) {
	c.t.Helper()
	conv, err := c.convs.Get(c.t.Context(), "c1")
	if err != nil {
		c.t.Fatal(err)
	}
	_, err = conv.Append(c.t.Context(), func(st *loop.State) ([]events.Event, error) {
		var evs []events.Event
		if st.Agent == "" {
			o := events.ConversationOpened{Agent: "master", Channel: "web"}
			if len(opened) > 0 {
				o = opened[0]
			}
			evs = append(evs, &o)
		}
		return append(evs, &events.MessageReceived{Channel: "web", Text: text}), nil
	})
	if err != nil {
		c.t.Fatal(err)
	}
	c.w.Kick("c1")
}

// answered waits until c1's runs are finished and nothing is queued.
func (c *crew) answered() *loop.State {
	c.t.Helper()
	var st *loop.State
	eventstest.Eventually(c.t, "answered", func() bool {
		st = c.state("c1")
		return c.w.Idle() && st.OpenRun == "" && len(st.Queued) == 0 && len(st.Messages) > 0
	})
	return st
}

func (c *crew) state(conv string) *loop.State {
	c.t.Helper()
	st, err := loop.LoadState(c.t.Context(), c.log, nil, conv)
	if err != nil {
		c.t.Fatal(err)
	}
	return st
}

func (c *crew) events(conv string) []events.Event {
	c.t.Helper()
	envs, err := c.log.ReadAll(c.t.Context(), events.Conv(conv).Filter(), 0)
	if err != nil {
		c.t.Fatal(err)
	}
	out := make([]events.Event, len(envs))
	for i, env := range envs {
		if out[i], err = env.Decode(); err != nil {
			c.t.Fatal(err)
		}
	}
	return out
}

func delegateTo(agent, task string) reply {
	b, _ := json.Marshal(map[string]string{"agent": agent, "task": task})
	return use(loop.DelegateTool, string(b))
}

func costs(r reply, usd float64) reply {
	r.cost = &usd
	return r
}

// delegateResults are the results of c1's delegate calls, in order.
func delegateResults(evs []events.Event) []*events.ToolCompleted {
	var out []*events.ToolCompleted
	for _, tc := range eventsOf[*events.ToolCompleted](evs) {
		if tc.Tool == loop.DelegateTool {
			out = append(out, tc)
		}
	}
	return out
}

// R-DEL: the child sees only the brief — its own persona, the task, never
// the master's chat — and its answer is the tool result; the child run
// nests under the parent run.
func TestDelegateChildSeesOnlyTheBrief(t *testing.T) {
	task := "Suggest a breakfast for a 10k run at 7am. The owner is vegetarian."
	c := newCrew(t, map[string][]reply{
		"master": {delegateTo("coach", task), say("The coach says: oats.")},
		"coach":  {say("Oats with banana, two hours before.")},
	})
	c.start()
	c.send("SECRET-MASTER-CHAT: what should I eat before tomorrow's run?")
	st := c.answered()

	seen := c.model("coach").seen
	if len(seen) != 1 {
		t.Fatalf("coach called %d times", len(seen))
	}
	var sent strings.Builder
	for _, m := range seen[0] {
		for _, p := range m.Parts {
			fmt.Fprintf(&sent, "%s: %s\n", m.Role, p.Text)
		}
	}
	if !strings.Contains(sent.String(), "user: "+task) || !strings.Contains(sent.String(), "You are the coach persona.") {
		t.Errorf("the child's request lacks the task or its persona:\n%s", sent.String())
	}
	if strings.Contains(sent.String(), "SECRET-MASTER-CHAT") || strings.Contains(sent.String(), "master persona") {
		t.Errorf("the child saw the master's chat or persona:\n%s", sent.String())
	}

	res := delegateResults(c.events("c1"))
	if len(res) != 1 || res[0].Output != "Oats with banana, two hours before." || res[0].IsError || res[0].Delegate == nil {
		t.Fatalf("delegate result = %+v", res)
	}
	d := res[0].Delegate
	child := loop.ChildID("c1", res[0].CallID)
	if d.Agent != "coach" || d.Conversation != child || d.Status != events.RunDone || d.RunID == "" {
		t.Errorf("delegate = %+v", d)
	}
	if last := st.Messages[len(st.Messages)-1]; last.Text != "The coach says: oats." {
		t.Errorf("master's answer = %+v", last)
	}

	cevs := c.events(child)
	opened := cevs[0].(*events.ConversationOpened)
	parentRun := eventsOf[*events.RunStarted](c.events("c1"))[0].RunID
	if opened.Agent != "coach" || opened.Channel != "delegate" || !opened.Autonomous || opened.RootID != "c1" || opened.RootSource != "web" ||
		opened.ParentConversation != "c1" || opened.ParentCallID != res[0].CallID || opened.ParentRunID != parentRun ||
		opened.ApprovalTTLSeconds != 600 || opened.Title != "Suggest a breakfast for a 10k run at 7am. The owner is vegetarian." {
		t.Errorf("child opened = %+v", opened)
	}
	if msg := cevs[1].(*events.MessageReceived); msg.Text != task || msg.From != "master" || msg.Channel != "delegate" {
		t.Errorf("child brief = %+v", msg)
	}
	rs := eventsOf[*events.RunStarted](cevs)
	if len(rs) != 1 || rs[0].ParentRunID != parentRun || rs[0].Trigger != "delegate" || rs[0].RunID != d.RunID {
		t.Errorf("child run_started = %+v", rs)
	}
	c.validate("c1", child)
}

// validate checks every stored event of the conversations against its
// schema.
func (c *crew) validate(convs ...string) {
	c.t.Helper()
	for _, conv := range convs {
		envs, err := c.log.ReadAll(c.t.Context(), events.Conv(conv).Filter(), 0)
		if err != nil {
			c.t.Fatal(err)
		}
		for _, env := range envs {
			body, _ := json.Marshal(env)
			if err := schemas.ValidateJSON(events.SchemaPath(env.Type, env.V), body); err != nil {
				c.t.Errorf("%s %s does not validate: %v\n%s", conv, env.Type, err, body)
			}
		}
	}
}

// R-DEL, R-LOOP-5: the child's spending is the parent's: it is added to the
// parent's cost and counts against the parent's cap.
func TestDelegateCostCountsIntoParent(t *testing.T) {
	c := newCrew(t, map[string][]reply{
		"master": {costs(delegateTo("coach", "plan"), 0.10), costs(say("never asked"), 0.01)},
		"coach":  {costs(say("the plan"), 0.20)},
	})
	m := c.agents["master"]
	m.CostCapUSD = 0.25
	c.agents["master"] = m
	c.start()
	c.send("plan my week")
	st := c.answered()
	res := delegateResults(c.events("c1"))
	if len(res) != 1 || res[0].Delegate.CostUSD == nil || *res[0].Delegate.CostUSD != 0.20 {
		t.Fatalf("delegate result = %+v", res)
	}
	if st.CostUSD < 0.2999 || st.CostUSD > 0.3001 {
		t.Errorf("parent cost = %v, want 0.10 + the child's 0.20", st.CostUSD)
	}
	// 0.30 spent of a 0.25 cap: the next model call is not made.
	if f := lastFinish(t, c.events("c1")); f.Status != events.RunHalted || f.Reason != "cost_cap" {
		t.Errorf("finish = %+v, want halted cost_cap", f)
	}
	if n := c.model("master").calls(); n != 1 {
		t.Errorf("master called %d times, want 1", n)
	}
}

// R-DEL, R-HOME-6: a child's budget is min(its own cap, what the parent has
// left); no cap on either side leaves it unset; nothing left refuses.
func TestDelegateBudgetIsMinOfOwnCapAndParentLeft(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name                string
		parentCap, childCap float64
		want                *float64
		refused             bool
	}{
		{"own cap smaller", 0.5, 0.2, f(0.2), false},
		{"parent's rest smaller", 0.5, 1.0, f(0.4), false},
		{"child without cap", 0.5, 0, f(0.4), false},
		{"parent without cap", 0, 0.3, f(0.3), false},
		{"neither has a cap", 0, 0, nil, false},
		{"nothing left", 0.1, 0.3, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCrew(t, map[string][]reply{
				"master": {costs(delegateTo("coach", "plan"), 0.10), say("done")},
				"coach":  {say("the plan")},
			})
			m, ch := c.agents["master"], c.agents["coach"]
			m.CostCapUSD, ch.CostCapUSD = tc.parentCap, tc.childCap
			c.agents["master"], c.agents["coach"] = m, ch
			c.start()
			c.send("plan")
			c.answered()
			res := delegateResults(c.events("c1"))
			if len(res) != 1 {
				t.Fatalf("results %+v", res)
			}
			if tc.refused {
				if !res[0].IsError || res[0].Outcome != "blocked" || !strings.Contains(res[0].Output, "no budget left") || c.model("coach").calls() != 0 {
					t.Errorf("result = %+v, coach calls %d", res[0], c.model("coach").calls())
				}
				return
			}
			opened := c.events(loop.ChildID("c1", res[0].CallID))[0].(*events.ConversationOpened)
			got := opened.CostCapUSD
			if (got == nil) != (tc.want == nil) || got != nil && (*got < *tc.want-1e-9 || *got > *tc.want+1e-9) {
				t.Errorf("child cost_cap_usd = %v, want %v", deref(got), deref(tc.want))
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// R-DEL: delegation goes one level deep: a child's delegate call is refused
// and nothing is opened.
func TestDelegateOneLevelDeep(t *testing.T) {
	c := newCrew(t, map[string][]reply{
		"master": {delegateTo("coach", "plan, ask the ledger for the budget"), say("done")},
		"coach":  {delegateTo("ledger", "what is the budget?"), say("planned without the ledger")},
	})
	c.start()
	c.send("plan")
	c.answered()
	res := delegateResults(c.events("c1"))
	if len(res) != 1 || res[0].Output != "planned without the ledger" {
		t.Fatalf("master's delegate result = %+v", res)
	}
	child := loop.ChildID("c1", res[0].CallID)
	inner := delegateResults(c.events(child))
	if len(inner) != 1 || !inner[0].IsError || inner[0].Outcome != "blocked" || !strings.Contains(inner[0].Output, "one level deep") {
		t.Errorf("child's delegate result = %+v", inner)
	}
	c.validate("c1", child)
	if got := eventsOf[*events.ToolCalled](c.events(child)); len(got) != 0 {
		t.Errorf("the refused call was recorded as started: %+v", got)
	}
	if n := c.model("ledger").calls(); n != 0 {
		t.Errorf("ledger called %d times", n)
	}
	coach := c.model("coach")
	coach.mu.Lock()
	for i, names := range coach.offered {
		if slices.Contains(names, loop.DelegateTool) {
			t.Errorf("the child's call %d was offered delegate: %v", i+1, names)
		}
	}
	coach.mu.Unlock()
	if master := c.model("master"); !slices.Contains(master.offered[0], loop.DelegateTool) {
		t.Errorf("the master was not offered delegate: %v", master.offered[0])
	}
	if last, err := c.log.Last(t.Context(), events.Conv(loop.ChildID(child, inner[0].CallID)).Filter()); err != nil || last != 0 {
		t.Errorf("a grandchild conversation was opened (last %d, %v)", last, err)
	}
}

// R-DEL, R-HOME-6: at most 8 delegations per conversation.
func TestDelegateAtMostEightPerConversation(t *testing.T) {
	var script, coach []reply
	for i := range 9 {
		script = append(script, delegateTo("coach", fmt.Sprint("task ", i)))
	}
	for range 8 {
		coach = append(coach, say("ok"))
	}
	c := newCrew(t, map[string][]reply{"master": append(script, say("done")), "coach": coach})
	c.start()
	c.send("nine tasks")
	c.answered()
	res := delegateResults(c.events("c1"))
	if len(res) != 9 {
		t.Fatalf("%d results", len(res))
	}
	for i, r := range res[:8] {
		if r.IsError || r.Output != "ok" {
			t.Errorf("delegation %d: %+v", i+1, r)
		}
	}
	if r := res[8]; !r.IsError || r.Outcome != "blocked" || !strings.Contains(r.Output, "already made 8 delegations") || r.Delegate != nil {
		t.Errorf("9th delegation = %+v", r)
	}
	if n := c.model("coach").calls(); n != 8 {
		t.Errorf("coach ran %d times, want 8", n)
	}
}

// R-DEL: delegates: limits whom an agent may call, and the refusal names
// whom it may; unknown agents and itself are refused too.
func TestDelegatesListRefusesOthers(t *testing.T) {
	c := newCrew(t, map[string][]reply{
		"master": {delegateTo("ledger", "balance?"), delegateTo("master", "me"), delegateTo("nobody", "x"), delegateTo("coach", "plan"), say("done")},
		"coach":  {say("planned")},
	})
	m := c.agents["master"]
	m.Delegates = []string{"coach"}
	c.agents["master"] = m
	c.start()
	c.send("go")
	c.answered()
	res := delegateResults(c.events("c1"))
	if len(res) != 4 {
		t.Fatalf("%d results", len(res))
	}
	for i, want := range []string{`you may not delegate to "ledger"`, "cannot delegate to yourself", `you may not delegate to "nobody"`} {
		if r := res[i]; !r.IsError || r.Outcome != "blocked" || !strings.Contains(r.Output, want) || !strings.Contains(r.Output, "You may delegate to: coach.") {
			t.Errorf("call %d = %+v, want a refusal with %q naming coach", i+1, r, want)
		}
	}
	if r := res[3]; r.IsError || r.Output != "planned" {
		t.Errorf("delegate to coach = %+v", r)
	}
	if n := c.model("ledger").calls(); n != 0 {
		t.Errorf("ledger called %d times", n)
	}
}

// R-DEL, R-GATE-1: the child is autonomous — a gated tool runs without
// asking — but an ask reason still asks; the parent waits; the approval's
// TTL is the parent's.
func TestDelegateChildAutonomousButAskReasonsAsk(t *testing.T) {
	gated := &counter{name: "workspace_write", write: true}
	risky := &counter{name: "shell_run", write: true, ask: "matches shell_ask_patterns"}
	c := newCrew(t, map[string][]reply{
		"master": {delegateTo("coach", "write and run"), say("done")},
		"coach":  {use("workspace_write", `{}`), use("shell_run", `{"command":"rm -rf x"}`), say("wrote and ran")},
	}, gated, risky)
	c.start()
	c.send("go", events.ConversationOpened{Agent: "master", Channel: "web", ApprovalTTLSeconds: 120})
	var child string
	var pending *loop.Approval
	eventstest.Eventually(c.t, "the child asks", func() bool {
		evs := c.events("c1")
		if calls := eventsOf[*events.ToolCalled](evs); len(calls) > 0 {
			child = loop.ChildID("c1", calls[0].CallID)
			pending = c.state(child).PendingApproval()
		}
		return pending != nil
	})
	if gated.runs.Load() != 1 || risky.runs.Load() != 0 {
		t.Errorf("gated ran %d, risky ran %d; want 1, 0", gated.runs.Load(), risky.runs.Load())
	}
	if want := c.now.Add(120 * time.Second); !pending.ExpiresAt.Equal(want) {
		t.Errorf("approval expires %v, want %v (the parent's TTL)", pending.ExpiresAt, want)
	}
	if st := c.state("c1"); st.OpenRun == "" || len(delegateResults(c.events("c1"))) != 0 {
		t.Errorf("the parent did not wait: open run %q", st.OpenRun)
	}
	if _, err := c.w.Decide(t.Context(), child, pending.ID, true, false, "web"); err != nil {
		t.Fatal(err)
	}
	c.answered()
	if res := delegateResults(c.events("c1")); len(res) != 1 || res[0].Output != "wrote and ran" {
		t.Errorf("result = %+v", res)
	}
	if risky.runs.Load() != 1 {
		t.Errorf("approved call ran %d times", risky.runs.Load())
	}
}

// blockingModel answers nothing until its context ends (a server stopped
// mid-call).
type blockingModel struct{ started chan struct{} }

func (m *blockingModel) Call(ctx context.Context, _ llm.Request) (llm.Reply, error) {
	select {
	case m.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return llm.Reply{}, ctx.Err()
}

// R-DEL, R-REL-2: a delegate call left open by a restart is not closed as
// interrupted: the parent waits on the child again (opening it when the
// crash came first) and the child carries on.
func TestDelegateRestartWhileWaiting(t *testing.T) {
	t.Run("child running", func(t *testing.T) {
		c := newCrew(t, map[string][]reply{
			"master": {delegateTo("coach", "plan"), say("the coach planned")},
		})
		block := &blockingModel{started: make(chan struct{}, 1)}
		c.models["fake:coach"] = block
		c.start()
		c.send("plan")
		select {
		case <-block.started:
		case <-time.After(20 * time.Second):
			t.Fatal("the child never called its model")
		}
		c.w.Close() // the server stops: the child's call and the parent's wait are cut
		c.mu.Lock()
		c.models["fake:coach"] = &fakeModel{route: "fake:coach", replies: []reply{say("planned")}}
		c.mu.Unlock()

		c.start("c1") // the recovery scan finds the parent only
		st := c.answered()
		if last := st.Messages[len(st.Messages)-1]; last.Text != "the coach planned" {
			t.Errorf("answer = %+v", last)
		}
		checkResumed(t, c)
	})
	t.Run("crash before the child was opened", func(t *testing.T) {
		c := newCrew(t, map[string][]reply{
			"master": {say("the coach planned")},
			"coach":  {say("planned")},
		})
		call := delegateTo("coach", "plan").calls[0]
		conv, err := loop.NewConvs(c.log, nil).Get(t.Context(), "c1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conv.Append(t.Context(), func(*loop.State) ([]events.Event, error) {
			return []events.Event{
				&events.ConversationOpened{Agent: "master", Channel: "web"},
				&events.MessageReceived{Channel: "web", Text: "plan"},
				&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"},
				&events.ModelCalled{RunID: "r1", Step: 1, Route: "fake:master", ToolCalls: []events.ToolCallRequest{call}, CostUSD: new(0.0)},
				&events.ToolCalled{RunID: "r1", Step: 1, CallID: call.ID, Tool: loop.DelegateTool, Arguments: call.Arguments},
			}, nil
		}); err != nil {
			t.Fatal(err)
		}
		c.start("c1")
		c.answered()
		checkResumed(t, c)
		opened := c.events(loop.ChildID("c1", call.ID))[0].(*events.ConversationOpened)
		if opened.ParentRunID != "r1" || opened.ParentCallID != call.ID {
			t.Errorf("child opened = %+v", opened)
		}
	})
	// The opening and the brief are two publishes, not one atomic write: a
	// crash (or a shutdown cancelling the append) between them leaves a
	// child with no message, which no pass would ever run.
	t.Run("crash between the child's opening and its brief", func(t *testing.T) {
		c := newCrew(t, map[string][]reply{
			"master": {say("the coach planned")},
			"coach":  {say("planned")},
		})
		call := delegateTo("coach", "plan").calls[0]
		convs := loop.NewConvs(c.log, nil)
		add := func(conv string, evs ...events.Event) {
			t.Helper()
			cv, err := convs.Get(t.Context(), conv)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cv.Append(t.Context(), func(*loop.State) ([]events.Event, error) { return evs, nil }); err != nil {
				t.Fatal(err)
			}
		}
		add("c1",
			&events.ConversationOpened{Agent: "master", Channel: "web"},
			&events.MessageReceived{Channel: "web", Text: "plan"},
			&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"},
			&events.ModelCalled{RunID: "r1", Step: 1, Route: "fake:master", ToolCalls: []events.ToolCallRequest{call}, CostUSD: new(0.0)},
			&events.ToolCalled{RunID: "r1", Step: 1, CallID: call.ID, Tool: loop.DelegateTool, Arguments: call.Arguments})
		add(loop.ChildID("c1", call.ID), &events.ConversationOpened{Agent: "coach", Channel: loop.DelegateChannel, RootID: "c1", RootSource: "web",
			ParentRunID: "r1", ParentConversation: "c1", ParentCallID: call.ID, Autonomous: true, ApprovalTTLSeconds: 600})
		c.start("c1")
		c.answered()
		checkResumed(t, c)
	})
}

// checkResumed: one delegate call, one child, one child run, a real result
// and no interrupted one.
func checkResumed(t *testing.T, c *crew) {
	t.Helper()
	evs := c.events("c1")
	calls := eventsOf[*events.ToolCalled](evs)
	res := delegateResults(evs)
	if len(calls) != 1 || len(res) != 1 || res[0].Output != "planned" || res[0].Outcome != "" || res[0].Delegate == nil {
		var got []string
		for _, r := range res {
			got = append(got, fmt.Sprintf("%s (%s)", r.Output, r.Outcome))
		}
		t.Fatalf("%d delegate calls, results %q; want one, answered by the child", len(calls), got)
	}
	child := c.events(loop.ChildID("c1", calls[0].CallID))
	if n := len(eventsOf[*events.ConversationOpened](child)); n != 1 {
		t.Errorf("child opened %d times", n)
	}
	if n := len(eventsOf[*events.MessageReceived](child)); n != 1 {
		t.Errorf("child briefed %d times", n)
	}
	if rs := eventsOf[*events.RunStarted](child); len(rs) != 1 || rs[0].RunID != res[0].Delegate.RunID {
		t.Errorf("child runs %+v, result names %s", rs, res[0].Delegate.RunID)
	}
}

// R-OBS-3 with delegation: replaying a run that delegated answers each
// delegate call as recorded (refused or answered) and runs no child.
func TestDelegateRunReplays(t *testing.T) {
	c := newCrew(t, map[string][]reply{
		"master": {delegateTo("ledger", "balance?"), delegateTo("coach", "plan"), say("planned")},
		"coach":  {say("the plan")},
	})
	m := c.agents["master"]
	m.Delegates = []string{"coach"}
	c.agents["master"] = m
	c.start()
	c.send("plan")
	c.answered()
	envs, err := c.log.ReadAll(t.Context(), events.Conv("c1").Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	run := eventsOf[*events.RunStarted](c.events("c1"))[0].RunID
	coachCalls := c.model("coach").calls()
	rep, err := loop.Replay(t.Context(), envs, run, c.agents["master"], c.deps.Tools, time.UTC, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diverged != nil {
		t.Fatalf("diverged at %+v", *rep.Diverged)
	}
	if n := c.model("coach").calls(); n != coachCalls {
		t.Errorf("replay ran the child: coach called %d times, was %d", n, coachCalls)
	}
}

// R-LOOP-8 with R-DEL: the owner's PreToolUse hook guards a delegation like
// any call: blocked, nothing is opened and the child never runs.
func TestDelegateBlockedByPreToolUseHook(t *testing.T) {
	c := newCrew(t, map[string][]reply{
		"master": {delegateTo("coach", "plan"), say("done")},
		"coach":  {say("planned")},
	})
	writeHooks(t, c.agents["master"].Dir, `{"hooks":{"PreToolUse":[{"matcher":"delegate","hooks":[{"type":"command","command":"echo 'no delegating today' >&2; exit 2"}]}]}}`)
	c.start()
	c.send("plan")
	c.answered()
	evs := c.events("c1")
	res := delegateResults(evs)
	if len(res) != 1 || res[0].Outcome != "blocked" || !strings.Contains(res[0].Output, "no delegating today") || len(eventsOf[*events.ToolCalled](evs)) != 0 {
		t.Fatalf("result = %+v", res)
	}
	if n := c.model("coach").calls(); n != 0 {
		t.Errorf("coach called %d times", n)
	}
	if last, err := c.log.Last(t.Context(), events.Conv(loop.ChildID("c1", res[0].CallID)).Filter()); err != nil || last != 0 {
		t.Errorf("a child was opened (last %d, %v)", last, err)
	}
}

// A provider that repeats a tool call id in a later reply gets a new
// delegation, not the first child's answer and cost again.
func TestDelegateRepeatedCallIDOpensANewChild(t *testing.T) {
	first, second := delegateTo("coach", "first"), delegateTo("coach", "second")
	second.calls[0].ID = first.calls[0].ID // the provider repeats the id
	c := newCrew(t, map[string][]reply{
		"master": {first, second, say("done")},
		"coach":  {say("answer one"), say("answer two")},
	})
	c.start()
	c.send("plan")
	c.answered()
	res := delegateResults(c.events("c1"))
	if len(res) != 2 || res[0].Output != "answer one" || res[1].Output != "answer two" || res[0].CallID == res[1].CallID {
		t.Fatalf("delegate results = %+v", res)
	}
	if n := c.model("coach").calls(); n != 2 {
		t.Errorf("coach called %d times, want 2", n)
	}
}

// A run whose agent is no longer loaded ends failed, and every call of its
// last reply gets a result (a started one as interrupted), so the history
// stays one a model accepts when the agent is back.
func TestUnloadedAgentRunClosesItsCalls(t *testing.T) {
	c := newCrew(t, nil)
	cost := 0.001
	last := uint64(0)
	for _, e := range []events.Event{
		&events.ConversationOpened{Agent: "master", Channel: "web"},
		&events.MessageReceived{Channel: "web", Text: "go"},
		&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"},
		&events.ModelCalled{RunID: "r1", Step: 1, Route: "fake:master", Model: "master", CostUSD: &cost, ToolCalls: []events.ToolCallRequest{
			{ID: "started", Name: loop.DelegateTool, Arguments: json.RawMessage(`{"agent":"coach","task":"x"}`)},
			{ID: "waiting", Name: "progress_note", Arguments: json.RawMessage(`{}`)},
		}},
		&events.ToolCalled{RunID: "r1", Step: 1, CallID: "started", Tool: loop.DelegateTool, Arguments: json.RawMessage(`{"agent":"coach","task":"x"}`)},
	} {
		stored, err := c.log.Append(t.Context(), events.Conv("c1"), last, events.MustNew(e))
		if err != nil {
			t.Fatal(err)
		}
		last = stored[0].Seq
	}
	delete(c.agents, "master") // a reload dropped it
	c.start("c1")
	eventstest.Eventually(c.t, "the run failed", func() bool {
		f := eventsOf[*events.RunFinished](c.events("c1"))
		return len(f) == 1
	})
	evs := c.events("c1")
	if f := eventsOf[*events.RunFinished](evs)[0]; f.Status != events.RunFailed || !strings.Contains(f.Error, "not loaded") {
		t.Errorf("finish = %+v", f)
	}
	got := map[string]string{}
	for _, d := range eventsOf[*events.ToolCompleted](evs) {
		got[d.CallID] = d.Outcome
	}
	if got["started"] != "interrupted" || got["waiting"] != "blocked" {
		t.Errorf("results = %v, want started interrupted and waiting blocked", got)
	}
	st := c.state("c1")
	if calls := st.UnansweredCalls(); len(calls) != 0 {
		t.Errorf("unanswered calls left: %+v", calls)
	}
}

// R-SCR, R-DEL: with script_calls: gated, a script of an agent holding
// delegate hands a task to another agent with tools.delegate: the child
// conversation hangs under the delegating run (its parent call is the
// script's call <id>.<n>), its answer is the script's value, and what it
// spent goes with the nested call (and into the conversation's cap), not
// into the run's own model calls. Without gated mode it is an error value.
func TestScriptDelegatesInGatedMode(t *testing.T) {
	for _, gated := range []bool{false, true} {
		reader := &counter{name: "reader"}
		src := "r = tools.delegate(\"coach\", \"Suggest a breakfast.\")\nprint(\"COACH:\", r.get(\"output\"), r.get(\"error\"))"
		b, _ := json.Marshal(map[string]string{"script": src})
		c := newCrew(t, map[string][]reply{
			"master": {use("tool_script", string(b)), say("done")},
			"coach":  {costs(say("Oats."), 0.003)},
		}, reader)
		if gated {
			a := c.agents["master"]
			a.ScriptCalls = loop.ScriptGated
			c.agents["master"] = a
		}
		c.start()
		c.send("ask the coach by script")
		st := c.answered()
		evs := c.events("c1")
		res := eventsOf[*events.ToolCompleted](evs)
		if len(res) != 1 {
			t.Fatalf("results %+v", res)
		}
		if !gated {
			if !strings.Contains(res[0].Output, "script_calls: gated") || len(c.model("coach").seen) != 0 {
				t.Errorf("read-only mode: result %q, coach called %d times", res[0].Output, len(c.model("coach").seen))
			}
			continue
		}
		if !strings.Contains(res[0].Output, "COACH: Oats.") {
			t.Fatalf("result %q", res[0].Output)
		}
		n := eventsOf[*events.NestedCall](evs)
		if len(n) != 1 || n[0].Tool != loop.DelegateTool || n[0].Delegate == nil || n[0].Delegate.Agent != "coach" ||
			n[0].CostUSD == nil || *n[0].CostUSD != 0.003 {
			t.Fatalf("nested %+v", n)
		}
		child := c.state(n[0].Delegate.Conversation)
		if child.ParentConversation != "c1" || child.ParentCallID != res[0].CallID+".1" || child.ParentRunID != res[0].RunID {
			t.Errorf("child hangs under %s/%s/%s", child.ParentConversation, child.ParentRunID, child.ParentCallID)
		}
		if st.Delegations != 1 || st.CostUSD < 0.003 {
			t.Errorf("delegations %d, cost %v", st.Delegations, st.CostUSD)
		}
	}
}
