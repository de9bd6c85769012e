package loop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/refusal"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/shell"
)

// Caps of a task notification's output: its head and its tail (R-TEAM §8).
const (
	TaskOutputHead = 4 << 10
	TaskOutputTail = 4 << 10
)

// Background runs shell_run's background commands for the server: each in
// its own process group and namespaces through the Sandbox (so tracked, and
// killed at the next start after a crash), its start stored as
// task_started before it runs and its end appended to the conversation as
// a task_notification, which the worker turns into the next round. A stop
// (task_stop_requested, or a run_stop_requested naming the task) kills its
// process group: SIGTERM, SIGKILL after StopGrace; its notification says
// who stopped it and opens no round. Close kills what still runs.
type Background struct {
	convs  *Convs
	box    *shell.Sandbox
	newID  func() string
	logger *slog.Logger
	// holder names this process on a cluster ("" none) and alive says
	// whether another still runs (OnCluster).
	holder string
	alive  func(ctx context.Context, holder string) (bool, error)

	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool
	tasks  map[string]*bgTask // running here, by task id
	wg     sync.WaitGroup

	// stored, set only by this package's tests, runs after a task's
	// task_started is stored and before the task starts: a stop delivered
	// there must still end it.
	stored func(id string)
}

// bgTask is a background command running in this process.
type bgTask struct {
	conv   string
	cancel context.CancelCauseFunc
	out    *taskOutput
	stopBy string // who stopped it; "" not stopped
	done   chan struct{}
}

// taskStop is the cause a stopped task's context is cancelled with: its
// process group gets SIGTERM, then SIGKILL after StopGrace (tools/shell).
type taskStop struct{ by string }

func (s taskStop) Error() string          { return "stopped by " + s.by }
func (taskStop) TermGrace() time.Duration { return StopGrace }
func (s taskStop) Is(target error) bool   { return target == ErrStopped }

// NewBackground returns the runner of commands started in box; newID
// names tasks.
func NewBackground(convs *Convs, box *shell.Sandbox, newID func() string, logger *slog.Logger) *Background {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Background{convs: convs, box: box, newID: newID, logger: logger, ctx: ctx, cancel: cancel, tasks: map[string]*bgTask{}}
}

// OnCluster makes b a member of a cluster: holder names this process in
// every task_started, and alive says whether the process another task's
// holder names still runs (EndLeft ends only those whose holder is gone).
// holder "" (no cluster) changes nothing. It returns b; call it before
// Start.
func (b *Background) OnCluster(holder string, alive func(ctx context.Context, holder string) (bool, error)) *Background {
	if holder != "" {
		b.holder, b.alive = holder, alive
	}
	return b
}

// Clustered says whether b is a member of a cluster (OnCluster).
func (b *Background) Clustered() bool { return b.holder != "" }

// Start runs c in the background for the call env describes: the task is
// listed here first, then task_started is stored, then the command starts.
// Listed before its store, it is found by every stop that can name it (a
// stop needs task_started in the log), whether stored here or read from a
// peer by Sync; a stop that comes before the command starts ends it
// before it runs. A store that fails lists it no more.
func (b *Background) Start(env tools.Env, c shell.Command) (string, error) {
	if env.Conversation == "" {
		return "", errors.New("no conversation to report to")
	}
	id := "bg-" + b.newID()
	tctx, tcancel := context.WithCancelCause(b.ctx)
	t := &bgTask{conv: env.Conversation, cancel: tcancel, out: newTaskOutput(TaskOutputHead, TaskOutputTail), done: make(chan struct{})}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		tcancel(nil)
		return "", errors.New("the server is stopping")
	}
	b.tasks[id] = t
	b.wg.Add(1) // Close waits for this start: the task runs or is let go
	b.mu.Unlock()
	if err := b.storeStart(env, id, c); err != nil {
		b.mu.Lock()
		delete(b.tasks, id)
		b.mu.Unlock()
		tcancel(nil)
		close(t.done)
		b.wg.Done()
		return "", err
	}
	if b.stored != nil {
		b.stored(id)
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		// Stored as started: run does not start it, and its end says
		// it never ran.
		tcancel(nil)
	}
	go func() {
		defer b.wg.Done()
		b.run(tctx, env, id, c, t)
	}()
	if closed {
		return "", errors.New("the server is stopping")
	}
	return id, nil
}

// storeStart stores task id's task_started in env's conversation.
func (b *Background) storeStart(env tools.Env, id string, c shell.Command) error {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	cv, err := b.convs.Get(ctx, env.Conversation)
	if err != nil {
		return err
	}
	_, err = cv.Append(ctx, func(st *State) ([]events.Event, error) {
		if st.Closed {
			return nil, fmt.Errorf("conversation %s is closed", env.Conversation)
		}
		return []events.Event{&events.TaskStarted{TaskID: id, CallID: env.CallID, FromRun: env.RunID, Command: c.Script, Holder: b.holder}}, nil
	})
	return err
}

func (b *Background) run(ctx context.Context, env tools.Env, id string, c shell.Command, t *bgTask) {
	defer close(t.done)
	defer t.cancel(nil)
	// Everything it prints goes to the task's output, whose tail the task
	// list shows while it runs.
	c.Stdout, c.Stderr = t.out, t.out
	// A task stopped (or a server stopping) before this point is not
	// started; one stopped from here on is killed by Run as it starts.
	begun := ctx.Err() == nil
	var out shell.Output
	var err error
	if begun {
		out, err = b.box.Run(ctx, c)
	}
	n := &events.TaskNotification{TaskID: id, CallID: env.CallID, FromRun: env.RunID, Command: c.Script,
		ExitCode: out.ExitCode, Signal: out.Signal, TimedOut: out.TimedOut}
	n.Output, n.Dropped = t.out.headTail()
	var stop taskStop
	switch {
	case ctx.Err() != nil && errors.As(context.Cause(ctx), &stop):
		n.StoppedBy, n.Failure = stop.by, "killed: stopped by "+stopWho(stop.by)
		if !begun {
			n.Failure += " before it started"
		} else if n.ExitCode >= 0 && n.Signal == "" {
			n.Failure += fmt.Sprintf(" (it exited %d on SIGTERM)", n.ExitCode)
		}
		n.ExitCode = -1
	case !begun:
		n.Failure, n.ExitCode = "killed: the server stopped before it ran", -1
	case err != nil && b.ctx.Err() != nil:
		n.Failure, n.ExitCode = "killed: the server stopped", -1
	case err != nil:
		n.Failure, n.ExitCode = err.Error(), -1
	}
	b.mu.Lock()
	delete(b.tasks, id)
	b.mu.Unlock()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), 10*time.Second)
	defer cancel()
	if err := b.report(rctx, env.Conversation, n); err != nil {
		b.logger.Error("background command's end not recorded", "conversation", env.Conversation, "task", id, "err", err)
	}
}

// LeftFailure is the failure of a task whose server crashed while it ran:
// the next start's shell tracker killed what was left of it.
const LeftFailure = "killed: the server stopped before it ended (crash)"

// EndLeft stores the end of every background task of conversation whose
// start has no end and that does not run here: a crashed server's,
// whose process the next start's shell tracker killed. Each end is a
// task_notification as any other (exit -1, LeftFailure): it tells the
// conversation and opens its next round, unless a stop of the task was
// asked (then it says who, and opens none). It lists the tasks it ended.
// On a cluster (OnCluster) only a task whose holder is gone is ended, a
// live peer's never; held counts the tasks left for a peer that still
// holds its life lease (one that crashed less than a lease's TTL ago
// looks alive until then: look again later).
func (b *Background) EndLeft(ctx context.Context, conversation string) (ended []string, held int, err error) {
	cv, err := b.convs.Get(ctx, conversation)
	if err != nil {
		return nil, 0, err
	}
	if err := cv.Refresh(ctx); err != nil {
		return nil, 0, err
	}
	// On a cluster a task is its holder's: ended only once that process
	// is gone (its life lease lapsed). One stored without a holder on a
	// cluster (an older build's) may be a live peer's: left alone.
	gone := map[string]bool{}
	if b.holder != "" {
		var holders []string
		cv.View(func(st *State) {
			for _, t := range st.Tasks {
				if t.End == nil && t.Holder != "" && t.Holder != b.holder && !slices.Contains(holders, t.Holder) {
					holders = append(holders, t.Holder)
				}
			}
		})
		for _, h := range holders {
			live, err := b.alive(ctx, h)
			if err != nil {
				return nil, 0, fmt.Errorf("is the process %s running task(s) of %s alive: %w", h, conversation, err)
			}
			gone[h] = !live
		}
	}
	_, err = cv.Append(ctx, func(st *State) ([]events.Event, error) {
		ended, held = ended[:0], 0
		var out []events.Event
		for _, id := range sortedKeys(st.Tasks) {
			t := st.Tasks[id]
			if t.End != nil || b.runsHere(id) {
				continue
			}
			if b.holder != "" && !gone[t.Holder] {
				if t.Holder != "" && t.Holder != b.holder {
					held++
				}
				continue
			}
			n := &events.TaskNotification{TaskID: id, CallID: t.CallID, FromRun: t.FromRun, Command: t.Command, ExitCode: -1, Failure: LeftFailure}
			if t.StopBy != "" {
				n.StoppedBy = t.StopBy
				n.Failure = "killed: stopped by " + stopWho(t.StopBy) + "; " + strings.TrimPrefix(LeftFailure, "killed: ")
			}
			out = append(out, n)
			ended = append(ended, id)
		}
		return out, nil
	})
	return ended, held, err
}

// runsHere says whether task id runs in this process.
func (b *Background) runsHere(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tasks[id] != nil
}

// stopWho names who stopped a task, for its notification.
func stopWho(by string) string {
	if by == events.StopByModel {
		return "the model (task_stop)"
	}
	return "the owner (" + by + ")"
}

// kill stops task id if it runs in this process, with by as who asked.
// It reports whether the task ran here.
func (b *Background) kill(id, by string) (*bgTask, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tasks[id]
	if t == nil {
		return nil, false
	}
	if t.stopBy == "" {
		t.stopBy = by
		t.cancel(taskStop{by})
	}
	return t, true
}

// Sync kills the tasks of conversation that run here and that its log says
// are to stop (a task_stop_requested or run_stop_requested another process
// of the cluster stored).
func (b *Background) Sync(ctx context.Context, conversation string) error {
	b.mu.Lock()
	var here []string
	for id, t := range b.tasks {
		if t.conv == conversation && t.stopBy == "" {
			here = append(here, id)
		}
	}
	b.mu.Unlock()
	if len(here) == 0 {
		return nil
	}
	cv, err := b.convs.Get(ctx, conversation)
	if err != nil {
		return err
	}
	if err := cv.Refresh(ctx); err != nil {
		return err
	}
	stops := map[string]string{}
	cv.View(func(st *State) {
		for _, id := range here {
			if t := st.Tasks[id]; t != nil && t.StopBy != "" {
				stops[id] = t.StopBy
			}
		}
	})
	for id, by := range stops {
		b.kill(id, by)
	}
	return nil
}

// ErrUnknownTask: no background task of that id (in that conversation).
var ErrUnknownTask = refusal.ErrUnknownTask

// ErrTaskEnded: the task has ended already; there is nothing to stop.
var ErrTaskEnded = refusal.ErrTaskEnded

// TaskView is one background task as the task list shows it (view.Task).
type TaskView = view.Task

// TaskOutputTailShown is how much of a task's output the list shows.
const TaskOutputTailShown = 2 << 10

func (b *Background) view(t *Task) TaskView {
	v := TaskView{ID: t.ID, Command: t.Command, Started: t.Started, State: t.State(), RunID: t.FromRun, StoppedBy: t.StopBy}
	if e := t.End; e != nil {
		code := e.ExitCode
		ended := t.Ended
		v.ExitCode, v.Failure, v.Ended, v.OutputTail = &code, e.Failure, &ended, tailOf(e.Output, TaskOutputTailShown)
		if e.StoppedBy != "" {
			v.StoppedBy = e.StoppedBy
		}
		return v
	}
	if b != nil {
		b.mu.Lock()
		bt := b.tasks[t.ID]
		b.mu.Unlock()
		if bt != nil {
			v.OutputTail = b.convs.Secrets().String(bt.out.tail(TaskOutputTailShown))
		}
	}
	return v
}

// Tasks lists conversation's background tasks, oldest first.
func (b *Background) Tasks(ctx context.Context, conversation string) ([]TaskView, error) {
	cv, err := b.convs.Get(ctx, conversation)
	if err != nil {
		return nil, err
	}
	if err := cv.Refresh(ctx); err != nil {
		return nil, err
	}
	var list []*Task
	cv.View(func(st *State) {
		for _, t := range st.Tasks {
			c := *t
			list = append(list, &c)
		}
	})
	slices.SortFunc(list, func(a, c *Task) int {
		if d := a.Started.Compare(c.Started); d != 0 {
			return d
		}
		return strings.Compare(a.ID, c.ID)
	})
	out := make([]TaskView, 0, len(list))
	for _, t := range list {
		out = append(out, b.view(t))
	}
	return out, nil
}

// StopTask stores the stop of conversation's background task id by by and
// kills it at once when it runs here (another process of the cluster
// kills it when its worker reads the stop). Unknown there: ErrUnknownTask;
// ended: ErrTaskEnded. A second stop of a task stopping stores nothing.
func (b *Background) StopTask(ctx context.Context, conversation, id, by string) (TaskView, error) {
	cv, err := b.convs.Get(ctx, conversation)
	if err != nil {
		return TaskView{}, err
	}
	var t Task
	if _, err := cv.Append(ctx, func(st *State) ([]events.Event, error) {
		cur := st.Tasks[id]
		switch {
		case cur == nil:
			return nil, fmt.Errorf("%w: %s in conversation %s", ErrUnknownTask, id, conversation)
		case cur.End != nil:
			return nil, fmt.Errorf("%w: %s ended %s (%s)", ErrTaskEnded, id, cur.Ended.Format(time.RFC3339), cur.State())
		}
		t = *cur
		if cur.StopBy != "" {
			return nil, nil
		}
		t.StopBy = by
		return []events.Event{&events.TaskStopRequested{TaskID: id, By: by}}, nil
	}); err != nil {
		return TaskView{}, err
	}
	b.kill(id, t.StopBy)
	return b.view(&t), nil
}

// Stop is the model's task_stop: only a task of the calling conversation
// is stopped; the call waits for it to end (at most StopGrace and a
// little) and answers with how it ended and its output's tail.
func (b *Background) Stop(ctx context.Context, env tools.Env, id string) (tools.Result, error) {
	var own bool
	if cv, err := b.convs.Get(ctx, env.Conversation); err == nil {
		cv.View(func(st *State) { own = st.Tasks[id] != nil })
	}
	if !own {
		return tools.Failf("refused: %s is not a background task of this conversation; task_stop stops only the tasks this conversation started", id), nil
	}
	v, err := b.StopTask(ctx, env.Conversation, id, events.StopByModel)
	switch {
	case errors.Is(err, ErrTaskEnded):
		return tools.Failf("task %s had already finished; its notification tells how it ended", id), nil
	case err != nil:
		return tools.Result{}, err
	}
	b.mu.Lock()
	t := b.tasks[id]
	b.mu.Unlock()
	if t == nil {
		return tools.Result{Output: fmt.Sprintf("Stop of task %s stored; the process running it kills it (SIGTERM, then SIGKILL after %s).", id, StopGrace)}, nil
	}
	select {
	case <-t.done:
	case <-time.After(StopGrace + 2*time.Second):
	case <-ctx.Done():
		return tools.Result{}, ctx.Err()
	}
	v.OutputTail = b.convs.Secrets().String(t.out.tail(TaskOutputTailShown))
	text := fmt.Sprintf("Stopped task %s (%s): its process group got SIGTERM, then SIGKILL after %s if still there.", id, v.Command, StopGrace)
	if v.OutputTail != "" {
		text += "\nOutput (tail):\n" + v.OutputTail
	}
	return tools.Result{Output: text}, nil
}

// report appends n to the conversation; the worker's trigger consumer
// starts the round it opens. A closed conversation (the owner's /new, the
// day's end: a task may outlive it) stores it too, or its task would be
// listed running for good; there it is told in the history and opens no
// round (State.Apply).
func (b *Background) report(ctx context.Context, conv string, n *events.TaskNotification) error {
	cv, err := b.convs.Get(ctx, conv)
	if err != nil {
		return err
	}
	_, err = cv.Append(ctx, func(*State) ([]events.Event, error) { return []events.Event{n}, nil })
	return err
}

// Close kills the commands still running (their whole process groups and
// PID namespaces) and waits until each has reported its end.
func (b *Background) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}

// headTail keeps at most head bytes of s's start and tail of its end, and
// says how many bytes it cut.
func headTail(s string, head, tail int) (string, int64) {
	if len(s) <= head+tail {
		return s, 0
	}
	cut := len(s) - head - tail
	text := s[:head] + "\n[… " + strconv.Itoa(cut) + " bytes of output dropped …]\n" + s[len(s)-tail:]
	return strings.ToValidUTF8(text, "\uFFFD"), int64(cut)
}

// taskOutput keeps the head and the tail of what a background command
// prints, safe for the command's copiers and the task list at once.
type taskOutput struct {
	mu      sync.Mutex
	head    []byte
	ring    []byte // the last bytes, up to tailCap
	headCap int
	tailCap int
	total   int64
}

func newTaskOutput(head, tail int) *taskOutput {
	return &taskOutput{headCap: head, tailCap: tail}
}

func (o *taskOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.total += int64(len(p))
	rest := p
	if room := o.headCap - len(o.head); room > 0 {
		n := min(room, len(rest))
		o.head = append(o.head, rest[:n]...)
		rest = rest[n:]
	}
	o.ring = append(o.ring, rest...)
	if over := len(o.ring) - o.tailCap; over > 0 {
		o.ring = append(o.ring[:0], o.ring[over:]...)
	}
	return len(p), nil
}

// headTail is the head and the tail, with how many bytes were cut between.
func (o *taskOutput) headTail() (string, int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	cut := o.total - int64(len(o.head)) - int64(len(o.ring))
	if cut == 0 {
		return strings.ToValidUTF8(string(o.head)+string(o.ring), "\uFFFD"), 0
	}
	text := string(o.head) + "\n[… " + strconv.FormatInt(cut, 10) + " bytes of output dropped …]\n" + string(o.ring)
	return strings.ToValidUTF8(text, "\uFFFD"), cut
}

// tail is the last n bytes printed.
func (o *taskOutput) tail(n int) string {
	o.mu.Lock()
	all := append(append([]byte{}, o.head...), o.ring...)
	o.mu.Unlock()
	return tailOf(string(all), n)
}

// tailOf is s's last n bytes, cut at a line start when one is near.
func tailOf(s string, n int) string {
	if len(s) > n {
		s = s[len(s)-n:]
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < 200 {
			s = s[i+1:]
		}
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// Background is the worker's background runner (nil when none).
func (w *Worker) Background() *Background { return w.cfg.Deps.Services.Background }

// BackgroundTasks is the background fold: the conversation's background
// commands (shell_run with run_in_background), by task id: started,
// stopping, ended.
type BackgroundTasks struct {
	Tasks map[string]*Task `json:"tasks,omitempty"`
}

func (f *BackgroundTasks) apply(env events.Envelope, _ foldOn) {
	switch e := decoded(env).(type) {
	case *events.TaskStarted:
		if f.Tasks == nil {
			f.Tasks = map[string]*Task{}
		}
		f.Tasks[e.TaskID] = &Task{ID: e.TaskID, CallID: e.CallID, FromRun: e.FromRun, Command: e.Command, Started: env.Time, Holder: e.Holder}
	case *events.TaskStopRequested:
		f.stop(e.TaskID, e.By)
	case *events.RunStopRequested:
		for _, id := range e.Tasks {
			f.stop(id, e.By)
		}
	case *events.TaskNotification:
		if t := f.Tasks[e.TaskID]; t != nil && t.End == nil {
			t.End, t.Ended = e, env.Time
		}
	}
}

// RunningTasks are the ids of the tasks not ended, in id order.
func (f *BackgroundTasks) RunningTasks() []string {
	var ids []string
	for _, id := range sortedKeys(f.Tasks) {
		if f.Tasks[id].End == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// stop records who asked task id to stop (the first ask counts).
func (f *BackgroundTasks) stop(id, by string) {
	if t := f.Tasks[id]; t != nil && t.End == nil && t.StopBy == "" {
		t.StopBy = by
	}
}
