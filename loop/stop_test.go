package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/loop/llm"
	"github.com/my-agent-crew/crew/tools"
)

// Tests of the owner's stop (issue 27), one per yield point: each checks
// the run ends stopped by whom, the model is called no more, no process of
// the run is left, and what was shown is kept and marked.

// stopAck is how long the stop took to take effect, read from the events'
// times (run_stop_requested to run_finished): logged, never asserted on
// the clock (docs/loop.md, Stop).
func stopAck(t *testing.T, h *harness) time.Duration {
	t.Helper()
	return stopAckIn(t, h.log, h.conv)
}

// stopAckIn is stopAck for conversation conv of log.
func stopAckIn(t *testing.T, log *events.Log, conv string) time.Duration {
	t.Helper()
	envs, err := log.ReadAll(t.Context(), events.Conv(conv).Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var asked, closed time.Time
	for _, env := range envs {
		switch env.Type {
		case events.TypeRunStopRequested:
			if asked.IsZero() {
				asked = env.Time
			}
		case events.TypeRunFinished:
			closed = env.Time
		}
	}
	if asked.IsZero() || closed.Before(asked) {
		t.Fatalf("no stop before the run's end (stop %v, end %v)", asked, closed)
	}
	d := closed.Sub(asked)
	t.Logf("stop of %s took effect %s after it was stored", conv, d)
	return d
}

// wantStopped checks the conversation's last run ended stopped by by, with
// every call of the run answered.
func wantStopped(t *testing.T, h *harness, by string) *events.RunFinished {
	t.Helper()
	f := lastFinish(t, h.events())
	if f.Status != events.RunStopped || f.Reason != events.StoppedByOwner || f.By != by {
		t.Fatalf("finish = %+v, want stopped_by_owner by %s", f, by)
	}
	st := h.state()
	if st.OpenRun != "" || len(st.UnansweredCalls()) != 0 {
		t.Fatalf("after the stop: open run %q, unanswered %v", st.OpenRun, st.UnansweredCalls())
	}
	stopAck(t, h)
	return f
}

func waitFinished(t *testing.T, h *harness, n int) {
	t.Helper()
	waitFor(t, "the run finished", func() bool { return len(eventsOf[*events.RunFinished](h.events())) >= n })
}

// stopDuringStream: an OpenAI-compatible server that streams a few words,
// then holds the reply open until the request is cancelled.
func stopServer(t *testing.T, requests *atomic.Int32, streaming, cancelled chan struct{}) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(`data: {"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":"Half a sentence "}}]}` + "\n\n"))
		w.Write([]byte(`data: {"id":"x","choices":[{"index":0,"delta":{"content":"and more"}}]}` + "\n\n"))
		w.(http.Flusher).Flush()
		close(streaming)
		select {
		case <-r.Context().Done():
			close(cancelled)
		case <-time.After(20 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Issue 27 item 2: during the model's stream the HTTP request is cancelled
// at once; the text already shown stays in the history, marked stopped;
// the run ends stopped and the model is not asked again.
func TestStopDuringModelStream(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": nil})
	var requests atomic.Int32
	streaming, cancelled := make(chan struct{}), make(chan struct{})
	srv := stopServer(t, &requests, streaming, cancelled)
	client, err := llm.NewClient(llm.ClientConfig{Provider: "openrouter", BaseURL: srv.URL, Model: "x/y"})
	if err != nil {
		t.Fatal(err)
	}
	h.deps.Models = llm.ModelsFunc(func(string) (llm.Model, error) { return llm.FromLangchain(client), nil })
	var shown atomic.Value
	shown.Store("")
	h.deps.Live = func(_, _ string, d llm.Delta) { shown.Store(shown.Load().(string) + d.Text) }
	h.send("write me a long poem")
	w := h.startWorker(nil)
	<-streaming
	waitFor(t, "the owner saw the text", func() bool { return shown.Load().(string) != "" })
	got, err := w.Stop(t.Context(), h.conv, "", events.StopByWeb)
	if err != nil || got.RunID == "" {
		t.Fatalf("stop = %+v, %v", got, err)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the model's HTTP request was not cancelled")
	}
	waitFinished(t, h, 1)
	wantStopped(t, h, events.StopByWeb)
	mcs := eventsOf[*events.ModelCalled](h.events())
	if len(mcs) != 1 || !mcs[0].Stopped || !strings.HasPrefix(mcs[0].Text, "Half a sentence") {
		t.Fatalf("model calls = %+v, want one stopped with the text shown", *mcs[0])
	}
	st := h.state()
	last := st.Messages[len(st.Messages)-1]
	if last.Role != loop.RoleAssistant || !last.Stopped || last.Text != mcs[0].Text {
		t.Fatalf("last message = %+v, want the partial reply marked stopped", last)
	}
	waitFor(t, "the worker idle", w.Idle)
	if n := requests.Load(); n != 1 {
		t.Fatalf("the model was asked %d times", n)
	}
}

// stopper is a tool that stores the owner's stop while it runs and then
// returns as if nothing happened (it ignores its context).
type stopper struct {
	counter
	stop func()
}

func (s *stopper) Run(ctx context.Context, env tools.Env, args json.RawMessage) (tools.Result, error) {
	s.stop()
	return s.counter.Run(ctx, env, args)
}

// Issue 27 item 2: a stop between steps — stored while a call ran to its
// end — keeps the call's result and makes no further model call.
func TestStopBetweenSteps(t *testing.T) {
	// The worker may start the pass before startWorker returns: the tool
	// reads the worker only once it is there.
	started := make(chan *loop.Worker, 1)
	var h *harness
	tool := &stopper{counter: counter{name: "look"}}
	h = newHarness(t, map[string][]reply{"fake:a": {use("look", `{}`), say("never said")}}, tool)
	tool.stop = func() {
		w := <-started
		if _, err := w.Stop(context.Background(), h.conv, events.StopRun, events.StopByAPI); err != nil {
			t.Errorf("stop: %v", err)
		}
	}
	h.send("look around")
	w := h.startWorker(nil)
	started <- w
	waitFinished(t, h, 1)
	wantStopped(t, h, events.StopByAPI)
	res := eventsOf[*events.ToolCompleted](h.events())
	if len(res) != 1 || res[0].Outcome != "" || res[0].Output != "ran look" {
		t.Fatalf("results = %+v, want the call's own result", res)
	}
	waitFor(t, "the worker idle", w.Idle)
	if n := h.models["fake:a"].calls(); n != 1 {
		t.Fatalf("the model was asked %d times after the stop", n)
	}
}

// procGroupLeft lists the processes of group pgid still alive (a /proc
// scan).
func procGroupLeft(t *testing.T, pgid int) []int {
	pids, _ := procGroup(t, pgid)
	return pids
}

// procGroup lists the live processes of group pgid and their names.
func procGroup(t *testing.T, pgid int) ([]int, []string) {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var left []int
	var names []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces.
		open := strings.IndexByte(string(stat), '(')
		closed := strings.LastIndexByte(string(stat), ')')
		if open < 0 || closed < open {
			continue
		}
		f := strings.Fields(string(stat[closed+1:]))
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			left = append(left, pid)
			names = append(names, string(stat[open+1:closed]))
		}
	}
	return left, names
}

// waitForSleep waits for the one command recorded in track to run its
// sleep, and returns its process group.
func waitForSleep(t *testing.T, track string) int {
	t.Helper()
	var pgid int
	waitFor(t, "the command to reach its sleep", func() bool {
		g := trackedGroups(t, track)
		if len(g) == 0 {
			return false
		}
		pgid = g[0]
		_, names := procGroup(t, pgid)
		return slices.Contains(names, "sleep")
	})
	return pgid
}

// trackedGroups are the process groups of the commands recorded in dir.
func trackedGroups(t *testing.T, dir string) []int {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".json")); err == nil && strings.HasSuffix(e.Name(), ".json") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Issue 27 item 2: while a shell command runs, its process group gets
// SIGTERM (then SIGKILL after 3 s); the call is closed stopped with what it
// printed so far, never re-run; no process of it is left.
func TestStopWhileShellRuns(t *testing.T) {
	script := `echo partial-output; trap 'echo got-term; exit 3' TERM; sleep 60 & wait`
	h := newHarness(t, map[string][]reply{"fake:a": {use("shell_run", `{"command":`+strconv.Quote(script)+`}`), say("never said")}}, builtin("shell_run"))
	track := trackShell(t, h)
	h.agent.Autonomous = true
	h.send("run it")
	w := h.startWorker(nil)
	pgid := waitForSleep(t, track)
	if _, err := w.Stop(t.Context(), h.conv, events.StopAll, events.StopByTelegram); err != nil {
		t.Fatal(err)
	}
	groupGone(t, pgid, stopStored(t, h, events.TypeRunStopRequested))
	waitFinished(t, h, 1)
	wantStopped(t, h, events.StopByTelegram)
	res := eventsOf[*events.ToolCompleted](h.events())
	if len(res) != 1 || res[0].Outcome != "stopped" || !strings.Contains(res[0].Output, "partial-output") || !strings.Contains(res[0].Output, "got-term") {
		t.Fatalf("results = %+v, want stopped with the output so far and the SIGTERM seen", *res[0])
	}
	if n := len(eventsOf[*events.ToolCalled](h.events())); n != 1 {
		t.Fatalf("%d tool_called: the call ran again", n)
	}
	if left := procGroupLeft(t, pgid); len(left) > 0 {
		t.Fatalf("processes of the stopped command left: %v", left)
	}
	waitFor(t, "the worker idle", w.Idle)
	if n := h.models["fake:a"].calls(); n != 1 {
		t.Fatalf("the model was asked %d times", n)
	}
}

// Issue 27 item 2: a command that ignores SIGTERM is killed 3 s later.
func TestStopKillsCommandIgnoringTerm(t *testing.T) {
	script := `trap '' TERM; echo stubborn; sleep 60; echo never`
	h := newHarness(t, map[string][]reply{"fake:a": {use("shell_run", `{"command":`+strconv.Quote(script)+`}`)}}, builtin("shell_run"))
	track := trackShell(t, h)
	h.agent.Autonomous = true
	h.send("run it")
	w := h.startWorker(nil)
	pgid := waitForSleep(t, track)
	if _, err := w.Stop(t.Context(), h.conv, events.StopRun, events.StopByCLI); err != nil {
		t.Fatal(err)
	}
	groupGone(t, pgid, stopStored(t, h, events.TypeRunStopRequested)) // SIGKILL after the 3 s grace
	waitFinished(t, h, 1)
	wantStopped(t, h, events.StopByCLI)
	res := eventsOf[*events.ToolCompleted](h.events())
	if len(res) != 1 || res[0].Outcome != "stopped" || !strings.Contains(res[0].Output, "stubborn") || strings.Contains(res[0].Output, "never") {
		t.Fatalf("results = %+v", res)
	}
	if left := procGroupLeft(t, pgid); len(left) > 0 {
		t.Fatalf("processes left: %v", left)
	}
}

// Issue 27 item 2: a stop while an approval waits withdraws it (settled
// "withdrawn", by the stop's channel); nothing runs; a late decision is a
// conflict.
func TestStopWhileApprovalWaits(t *testing.T) {
	tool := &counter{name: "deploy", write: true}
	h := newHarness(t, map[string][]reply{"fake:a": {use("deploy", `{}`), say("never said")}}, tool)
	h.send("deploy")
	w := h.startWorker(nil)
	waitFor(t, "the approval asked", func() bool { return len(eventsOf[*events.ApprovalRequested](h.events())) == 1 })
	waitFor(t, "the worker idle", w.Idle)
	if _, err := w.Stop(t.Context(), h.conv, "", events.StopByWeb); err != nil {
		t.Fatal(err)
	}
	waitFinished(t, h, 1)
	wantStopped(t, h, events.StopByWeb)
	ar := eventsOf[*events.ApprovalRequested](h.events())[0]
	ds := eventsOf[*events.ApprovalDecided](h.events())
	if len(ds) != 1 || ds[0].Decision != events.DecisionWithdrawn || ds[0].ApprovalID != ar.ApprovalID {
		t.Fatalf("decisions = %+v, want the approval withdrawn", ds)
	}
	if res := eventsOf[*events.ToolCompleted](h.events()); len(res) != 1 || res[0].Outcome != "withdrawn" {
		t.Fatalf("results = %+v", *res[0])
	}
	if _, err := w.Decide(t.Context(), h.conv, ar.ApprovalID, true, false, "web"); !errors.Is(err, loop.ErrAlreadyDecided) {
		t.Fatalf("late approval: %v, want already decided", err)
	}
	waitFor(t, "the worker idle", w.Idle)
	if tool.runs.Load() != 0 || h.models["fake:a"].calls() != 1 {
		t.Fatalf("tool ran %d times, model asked %d times", tool.runs.Load(), h.models["fake:a"].calls())
	}
}

// Issue 27 item 2: a stop while a question waits withdraws it; a late
// answer is refused as withdrawn.
func TestStopWhileQuestionWaits(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {use("ask_user", `{"question":"Which day?"}`), say("never said")}})
	h.send("book it")
	w := h.startWorker(nil)
	waitFor(t, "the question asked", func() bool { return len(eventsOf[*events.QuestionAsked](h.events())) == 1 })
	waitFor(t, "the worker idle", w.Idle)
	if _, err := w.Stop(t.Context(), h.conv, events.StopRun, events.StopByTelegram); err != nil {
		t.Fatal(err)
	}
	waitFinished(t, h, 1)
	wantStopped(t, h, events.StopByTelegram)
	q := eventsOf[*events.QuestionAsked](h.events())[0]
	if ex := eventsOf[*events.QuestionExpired](h.events()); len(ex) != 1 || !ex[0].Withdrawn || ex[0].QuestionID != q.QuestionID {
		t.Fatalf("question settled = %+v, want withdrawn", ex)
	}
	if err := w.Answer(t.Context(), h.conv, q.QuestionID, "Tuesday", "web"); !errors.Is(err, loop.ErrQuestionWithdrawn) {
		t.Fatalf("late answer: %v, want withdrawn", err)
	}
	waitFor(t, "the worker idle", w.Idle)
	if h.models["fake:a"].calls() != 1 {
		t.Fatalf("model asked %d times", h.models["fake:a"].calls())
	}
}

// Issue 27 items 1 and 3: an idle conversation with nothing waiting is
// nothing_running; a stop is stored once (a second stop of a stopping run
// stores nothing more); scope queue drops the waiting messages and leaves
// the run alone.
func TestStopScopesAndNothingRunning(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {say("hi")}})
	h.send("hello")
	w := h.startWorker(nil)
	waitFinished(t, h, 1)
	waitFor(t, "the worker idle", w.Idle)
	if _, err := w.Stop(t.Context(), h.conv, "", events.StopByAPI); !errors.Is(err, loop.ErrNothingRunning) {
		t.Fatalf("stop of an idle conversation: %v", err)
	}
	if _, err := w.Stop(t.Context(), h.conv, "everything", events.StopByAPI); !errors.Is(err, loop.ErrBadScope) {
		t.Fatalf("bad scope: %v", err)
	}
	if n := len(eventsOf[*events.RunStopRequested](h.events())); n != 0 {
		t.Fatalf("%d stops stored for refused requests", n)
	}
}

// Issue 27 item 1: scope queue drops the messages waiting behind the
// running turn (each kept as dropped for the chat) and leaves the turn
// running; scope all of a stopping run stores the stop once.
func TestStopQueueDropsWaitingMessages(t *testing.T) {
	tool := &counter{name: "deploy", write: true}
	h := newHarness(t, map[string][]reply{"fake:a": {use("deploy", `{}`), say("deployed")}}, tool)
	h.send("deploy")
	w := h.startWorker(nil)
	waitFor(t, "the approval asked", func() bool { return len(eventsOf[*events.ApprovalRequested](h.events())) == 1 })
	h.send("and the docs")
	h.send("and tell Bob")
	got, err := w.Stop(t.Context(), h.conv, events.StopQueue, events.StopByWeb)
	if err != nil || got.Dropped != 2 || got.RunID != "" {
		t.Fatalf("stop queue = %+v, %v", got, err)
	}
	st := h.state()
	if len(st.Queued) != 0 || len(st.Dropped) != 2 || st.OpenRun == "" || st.Stop != nil {
		t.Fatalf("queued %d dropped %d open %q stop %+v", len(st.Queued), len(st.Dropped), st.OpenRun, st.Stop)
	}
	if _, err := w.Stop(t.Context(), h.conv, events.StopQueue, events.StopByWeb); !errors.Is(err, loop.ErrNothingRunning) {
		t.Fatalf("second queue stop: %v", err)
	}
	ar := eventsOf[*events.ApprovalRequested](h.events())[0]
	if _, err := w.Decide(t.Context(), h.conv, ar.ApprovalID, true, false, "web"); err != nil {
		t.Fatal(err)
	}
	waitFinished(t, h, 1)
	waitFor(t, "the worker idle", w.Idle)
	if f := lastFinish(t, h.events()); f.Status != events.RunDone {
		t.Fatalf("finish = %+v: the queue stop stopped the run", f)
	}
	if n := len(eventsOf[*events.RunStarted](h.events())); n != 1 {
		t.Fatalf("%d runs: a dropped message was answered", n)
	}
}

// Issue 27 item 3: a stop stored and then a crash before it took effect:
// on restart the run is closed stopped, not resumed, and nothing re-runs.
func TestStopStoredBeforeCrashClosesOnRestart(t *testing.T) {
	tool := &counter{name: "look"}
	h := newHarness(t, map[string][]reply{"fake:a": {say("never said")}}, tool)
	h.send("look")
	h.append(&events.RunStarted{RunID: "r1", Agent: "master", Trigger: "message"})
	h.append(&events.ModelCalled{RunID: "r1", Step: 1, Route: "fake:a", Model: "a",
		ToolCalls: []events.ToolCallRequest{{ID: "k1", Name: "look", Arguments: json.RawMessage(`{}`)}}})
	h.append(&events.ToolCalled{RunID: "r1", Step: 1, CallID: "k1", Tool: "look", Arguments: json.RawMessage(`{}`)})
	h.append(&events.RunStopRequested{RunID: "r1", By: events.StopByWeb, Scope: events.StopAll})
	// crash here; a new process starts:
	w := h.startWorker(nil)
	waitFinished(t, h, 1)
	waitFor(t, "the worker idle", w.Idle)
	wantStopped(t, h, events.StopByWeb)
	evs := h.events()
	if n := len(eventsOf[*events.RunResumed](evs)); n != 0 {
		t.Fatalf("the stopped run was resumed %d times", n)
	}
	res := eventsOf[*events.ToolCompleted](evs)
	if len(res) != 1 || res[0].Outcome != "stopped" || tool.runs.Load() != 0 || h.models["fake:a"].calls() != 0 {
		t.Fatalf("results %+v, tool runs %d, model calls %d", res, tool.runs.Load(), h.models["fake:a"].calls())
	}
	// Another start finds nothing to do: the stop is applied once.
	w.Close()
	w = h.startWorker(nil)
	waitFor(t, "the worker idle", w.Idle)
	if n := len(eventsOf[*events.RunFinished](h.events())); n != 1 {
		t.Fatalf("%d run_finished", n)
	}
}

// heldModel signals each call and holds it until its context ends.
type heldModel struct {
	calls   atomic.Int32
	entered chan struct{}
}

func (m *heldModel) Call(ctx context.Context, _ llm.Request) (llm.Reply, error) {
	if m.calls.Add(1) == 1 {
		close(m.entered)
	}
	<-ctx.Done()
	return llm.Reply{}, ctx.Err()
}

// Issue 27 item 2: a stop while a delegated child runs stops the child too
// (its run ends stopped by the same owner); the parent's delegate call is
// closed stopped; neither model is asked again.
func TestStopDelegatedChild(t *testing.T) {
	c := newCrew(t, map[string][]reply{"master": {use(loop.DelegateTool, `{"agent":"coach","task":"plan my week"}`), say("never said")}})
	child := &heldModel{entered: make(chan struct{})}
	c.mu.Lock()
	c.models["fake:coach"] = child
	c.mu.Unlock()
	c.start()
	c.send("plan it with the coach")
	select {
	case <-child.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the child never called its model")
	}
	if _, err := c.w.Stop(t.Context(), "c1", events.StopAll, events.StopByWeb); err != nil {
		t.Fatal(err)
	}
	st := c.answered()
	if f := lastFinishIn(t, c, "c1"); f.Status != events.RunStopped || f.By != events.StopByWeb {
		t.Fatalf("parent finish = %+v", f)
	}
	var callID string
	for _, m := range st.Messages {
		if m.Role == loop.RoleTool && m.Tool == loop.DelegateTool {
			callID = m.ToolCallID
			if m.Outcome != "stopped" {
				t.Fatalf("delegate result = %+v, want stopped", m)
			}
		}
	}
	if callID == "" {
		t.Fatal("no delegate result")
	}
	eventstest.Eventually(t, "the child stopped", func() bool {
		f := lastFinishIn(t, c, loop.ChildID("c1", callID))
		return f != nil && f.Status == events.RunStopped && f.By == events.StopByWeb
	})
	stopAckIn(t, c.log, "c1")
	stopAckIn(t, c.log, loop.ChildID("c1", callID))
	eventstest.Eventually(t, "the worker idle", c.w.Idle)
	if n := child.calls.Load(); n != 1 {
		t.Fatalf("the child's model was asked %d times", n)
	}
	if n := c.model("master").calls(); n != 1 {
		t.Fatalf("the parent's model was asked %d times", n)
	}
}

func lastFinishIn(t *testing.T, c *crew, conv string) *events.RunFinished {
	t.Helper()
	envs, err := c.log.ReadAll(t.Context(), events.Conv(conv).Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var f *events.RunFinished
	for _, env := range envs {
		if e, err := env.Decode(); err == nil {
			if x, ok := e.(*events.RunFinished); ok {
				f = x
			}
		}
	}
	return f
}
