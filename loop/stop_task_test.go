package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/loop"
	"github.com/my-agent-crew/crew/tools"
)

// Tests of the stop of background tasks (issue 27): a stop of the
// conversation kills the tasks it runs, POST /api/tasks/{id}/stop's
// Background.StopTask, and the model's task_stop for its own tasks only.
// Each reads the process table (the tracked process groups) as well as
// the events.

// startTaskWorker starts a worker whose turns run background commands on
// one runner, sharing the worker's conversation writers.
func startTaskWorker(t *testing.T, h *harness) (*loop.Worker, *loop.Background) {
	t.Helper()
	h.convs = loop.NewConvs(h.log, nil)
	bg := h.background()
	w, err := loop.StartWorker(t.Context(), loop.WorkerConfig{
		Log: h.log, Convs: h.convs, Deps: h.deps, SweepEvery: -1,
		Recover: func(context.Context) ([]string, error) { return nil, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(); bg.Close() })
	return w, bg
}

// trackShell records every command's process group in a fresh folder.
func trackShell(t *testing.T, h *harness) string {
	t.Helper()
	track := t.TempDir()
	if _, err := h.box.Track(track); err != nil {
		t.Fatal(err)
	}
	return track
}

// holder is a tool that waits until its call is cut (a stop).
type holder struct {
	counter
	entered chan struct{}
}

func (h *holder) Run(ctx context.Context, env tools.Env, args json.RawMessage) (tools.Result, error) {
	close(h.entered)
	<-ctx.Done()
	return tools.Result{Output: "cut"}, nil
}

// groupGone waits for a command's process group to leave the process
// table and says how long after the stop was stored it went (logged, not
// asserted: docs/loop.md, Stop).
func groupGone(t *testing.T, pgid int, stored time.Time) {
	t.Helper()
	waitFor(t, "the command's process group gone", func() bool { return len(procGroupLeft(t, pgid)) == 0 })
	t.Logf("the command's processes were gone %s after the stop was stored (at most)", time.Since(stored))
}

// stopStored is the time the conversation's last stop event of type typ
// was stored.
func stopStored(t *testing.T, h *harness, typ string) time.Time {
	t.Helper()
	envs, err := h.log.ReadAll(t.Context(), events.Conv(h.conv).Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var at time.Time
	for _, env := range envs {
		if env.Type == typ {
			at = env.Time
		}
	}
	if at.IsZero() {
		t.Fatalf("no %s stored", typ)
	}
	return at
}

const termAware = `echo task-started; trap 'echo task-got-term; exit 3' TERM; sleep 60 & wait`

// Issue 27 item 2 (a background shell task runs): a stop of the run kills
// the background tasks the conversation runs — run_stop_requested names
// them, the process group gets SIGTERM and is gone from the process table,
// the notification says who stopped it and opens no round; the run ends
// stopped and the model is not called again.
func TestStopKillsBackgroundTasks(t *testing.T) {
	hold := &holder{counter: counter{name: "wait_here"}, entered: make(chan struct{})}
	h := newHarness(t, map[string][]reply{"fake:a": {
		use("shell_run", `{"command":`+strconv.Quote(termAware)+`,"run_in_background":true}`), use("wait_here", `{}`), say("never said"),
	}}, builtin("shell_run"), hold)
	track := trackShell(t, h)
	h.agent.Autonomous = true
	w, _ := startTaskWorker(t, h)
	h.send("start it and wait")
	pgid := waitForSleep(t, track)
	<-hold.entered
	got, err := w.Stop(t.Context(), h.conv, events.StopAll, events.StopByWeb)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tasks) != 1 {
		t.Fatalf("stop = %+v, want the running task", got)
	}
	stored := stopStored(t, h, events.TypeRunStopRequested)
	n := waitTask(t, h, 1)
	if n.TaskID != got.Tasks[0] || n.StoppedBy != events.StopByWeb || n.ExitCode != -1 ||
		!strings.Contains(n.Output, "task-started") || !strings.Contains(n.Output, "task-got-term") || !strings.Contains(n.Failure, "stopped by the owner (web)") {
		t.Fatalf("notification = %+v", n)
	}
	groupGone(t, pgid, stored)
	waitFinished(t, h, 1)
	wantStopped(t, h, events.StopByWeb)
	stops := eventsOf[*events.RunStopRequested](h.events())
	if len(stops) != 1 || len(stops[0].Tasks) != 1 || stops[0].Tasks[0] != n.TaskID {
		t.Fatalf("run_stop_requested = %+v, want it to name the task", stops)
	}
	waitFor(t, "the worker idle", w.Idle)
	if n := len(eventsOf[*events.RunStarted](h.events())); n != 1 {
		t.Fatalf("%d runs started: the stopped task's notification opened a round", n)
	}
	if n := h.models["fake:a"].calls(); n != 2 {
		t.Fatalf("the model was asked %d times, want 2", n)
	}
	st := h.state()
	if task := st.Tasks[n.TaskID]; task == nil || task.State() != loop.TaskStopped {
		t.Fatalf("task state = %+v", task)
	}
	if msg := st.Messages[len(st.Messages)-1]; !msg.Task || !strings.Contains(msg.Text, "stopped by the owner (web)") {
		t.Fatalf("the history does not tell the stopped task: %+v", msg)
	}
}

// Issue 27 item 2: with no run open, a stop of the conversation still
// kills its background tasks (not nothing_running); once none runs, a
// stop is nothing_running.
func TestStopIdleConversationKillsItsTasks(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {
		use("shell_run", `{"command":`+strconv.Quote(termAware)+`,"run_in_background":true}`), say("Waiting."),
	}}, builtin("shell_run"))
	track := trackShell(t, h)
	h.agent.Autonomous = true
	w, _ := startTaskWorker(t, h)
	h.send("start it")
	pgid := waitForSleep(t, track)
	waitFinished(t, h, 1)
	got, err := w.Stop(t.Context(), h.conv, events.StopRun, events.StopByTelegram)
	if err != nil || got.RunID != "" || len(got.Tasks) != 1 {
		t.Fatalf("stop = %+v, %v; want the task stopped", got, err)
	}
	stored := stopStored(t, h, events.TypeRunStopRequested)
	n := waitTask(t, h, 1)
	if n.StoppedBy != events.StopByTelegram {
		t.Fatalf("notification = %+v", n)
	}
	groupGone(t, pgid, stored)
	waitFor(t, "the worker idle", w.Idle)
	if n := len(eventsOf[*events.RunStarted](h.events())); n != 1 {
		t.Fatalf("%d runs started", n)
	}
	if _, err := w.Stop(t.Context(), h.conv, events.StopAll, events.StopByTelegram); !errors.Is(err, loop.ErrNothingRunning) {
		t.Fatalf("second stop: %v, want nothing running", err)
	}
}

// Issue 27 item 4 (POST /api/tasks/{id}/stop's core): the task list shows
// a running task with its live output tail; StopTask stores
// task_stop_requested and kills the process group (gone from the process
// table), the list then shows it stopped by api; a second stop of the
// ended task is ErrTaskEnded, an unknown id ErrUnknownTask; nothing opens
// a round.
func TestStopOneBackgroundTask(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {
		use("shell_run", `{"command":`+strconv.Quote(termAware)+`,"run_in_background":true}`), say("Waiting."),
	}}, builtin("shell_run"))
	track := trackShell(t, h)
	h.agent.Autonomous = true
	w, bg := startTaskWorker(t, h)
	h.send("start it")
	pgid := waitForSleep(t, track)
	waitFinished(t, h, 1)
	var list []loop.TaskView
	waitFor(t, "the live output tail", func() bool {
		var err error
		list, err = bg.Tasks(t.Context(), h.conv)
		return err == nil && len(list) == 1 && strings.Contains(list[0].OutputTail, "task-started")
	})
	if v := list[0]; v.State != loop.TaskRunning || v.Command != termAware || v.Started.IsZero() || v.ExitCode != nil {
		t.Fatalf("running task = %+v", v)
	}
	id := list[0].ID
	v, err := bg.StopTask(t.Context(), h.conv, id, events.StopByAPI)
	if err != nil || v.StoppedBy != events.StopByAPI {
		t.Fatalf("stop = %+v, %v", v, err)
	}
	stored := stopStored(t, h, events.TypeTaskStopRequested)
	n := waitTask(t, h, 1)
	groupGone(t, pgid, stored)
	if n.StoppedBy != events.StopByAPI || !strings.Contains(n.Output, "task-got-term") {
		t.Fatalf("notification = %+v", n)
	}
	list, _ = bg.Tasks(t.Context(), h.conv)
	if v := list[0]; v.State != loop.TaskStopped || v.StoppedBy != events.StopByAPI || v.ExitCode == nil || *v.ExitCode != -1 ||
		v.Ended == nil || !strings.Contains(v.OutputTail, "task-got-term") {
		t.Fatalf("stopped task = %+v", v)
	}
	if _, err := bg.StopTask(t.Context(), h.conv, id, events.StopByAPI); !errors.Is(err, loop.ErrTaskEnded) {
		t.Fatalf("second stop: %v, want ErrTaskEnded", err)
	}
	if _, err := bg.StopTask(t.Context(), h.conv, "bg-nope", events.StopByAPI); !errors.Is(err, loop.ErrUnknownTask) {
		t.Fatalf("unknown task: %v", err)
	}
	if n := len(eventsOf[*events.TaskStopRequested](h.events())); n != 1 {
		t.Fatalf("%d task_stop_requested, want 1", n)
	}
	waitFor(t, "the worker idle", w.Idle)
	if n := len(eventsOf[*events.RunStarted](h.events())); n != 1 {
		t.Fatalf("%d runs started", n)
	}
}

// Issue 27 item 4: the model's task_stop stops only its own
// conversation's tasks. Another conversation naming the task is refused
// and the task runs on (still in the process table); the owning
// conversation's task_stop kills it, answers with the output's tail, and
// its notification (stopped by model) opens no round.
func TestTaskStopOnlyItsOwnTasks(t *testing.T) {
	h := newHarness(t, map[string][]reply{"fake:a": {
		use("shell_run", `{"command":`+strconv.Quote(termAware)+`,"run_in_background":true}`), say("Waiting."),
	}}, builtin("shell_run"), builtin("task_stop"))
	track := trackShell(t, h)
	h.agent.Autonomous = true
	w, bg := startTaskWorker(t, h)
	h.send("start it")
	pgid := waitForSleep(t, track)
	waitFinished(t, h, 1)
	list, err := bg.Tasks(t.Context(), h.conv)
	if err != nil || len(list) != 1 {
		t.Fatalf("tasks = %+v, %v", list, err)
	}
	id := list[0].ID
	m := h.models["fake:a"]
	m.mu.Lock()
	m.replies = append(m.replies, use("task_stop", `{"task_id":"`+id+`"}`), say("Not mine."),
		use("task_stop", `{"task_id":"`+id+`"}`), say("Stopped."))
	m.mu.Unlock()

	other := *h
	other.conv = "c2"
	other.send("stop the other conversation's task")
	waitFor(t, "c2's run finished", func() bool { return len(eventsOf[*events.RunFinished](other.events())) == 1 })
	res := eventsOf[*events.ToolCompleted](other.events())
	if len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].Output, "not a background task of this conversation") {
		t.Fatalf("c2's task_stop = %+v, want refused", res)
	}
	if len(procGroupLeft(t, pgid)) == 0 {
		t.Fatal("c2's refused task_stop killed c1's task")
	}
	if n := len(eventsOf[*events.TaskStopRequested](h.events())); n != 0 {
		t.Fatalf("c2's refused call stored %d stops on c1", n)
	}

	h.send("stop your task")
	waitFinished(t, h, 2)
	res = eventsOf[*events.ToolCompleted](h.events())
	last := res[len(res)-1]
	if last.Tool != "task_stop" || last.IsError || !strings.Contains(last.Output, "Stopped task "+id) || !strings.Contains(last.Output, "task-got-term") {
		t.Fatalf("c1's task_stop = %+v", last)
	}
	if len(procGroupLeft(t, pgid)) != 0 {
		t.Fatal("the task's processes are left after task_stop answered")
	}
	n := waitTask(t, h, 1)
	if n.StoppedBy != events.StopByModel || !strings.Contains(n.Failure, "task_stop") {
		t.Fatalf("notification = %+v", n)
	}
	waitFor(t, "the worker idle", w.Idle)
	if n := len(eventsOf[*events.RunStarted](h.events())); n != 2 {
		t.Fatalf("%d runs started on c1, want 2: the stopped task's notification opened a round", n)
	}
	// The stopped task's notice joins the history after the run's reply.
	if got := h.state().Messages; got[len(got)-2].Text != "Stopped." || !got[len(got)-1].Task {
		t.Fatalf("c1's history ends %+v, %+v", got[len(got)-2], got[len(got)-1])
	}
}
