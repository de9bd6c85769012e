package loop

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/refusal"
	"github.com/my-agent-crew/crew/events/view"
	"github.com/nats-io/nats.go/jetstream"
)

// Errors of decisions, mapped to HTTP statuses by the gateways (defined
// in events/refusal, which the web gateway reads).
var (
	ErrUnknownApproval = refusal.ErrUnknownApproval
	ErrAlreadyDecided  = refusal.ErrApprovalDecided
	ErrUnknownQuestion = refusal.ErrUnknownQuestion
	ErrAlreadyAnswered = refusal.ErrAlreadyAnswered
	ErrQuestionExpired = refusal.ErrQuestionExpired
	// ErrQuestionWithdrawn: the run was stopped while the question waited.
	ErrQuestionWithdrawn = refusal.ErrQuestionWithdrawn
	ErrBadAnswer         = refusal.ErrBadAnswer
)

// WorkerConfig wires a Worker.
type WorkerConfig struct {
	Log   *events.Log
	Convs *Convs
	// Deps are the turns' edges; Deps.Crew is the crew whose agents the
	// conversations run on.
	Deps   Deps
	Logger *slog.Logger
	// Recover lists conversations that may have work after a restart (open
	// runs, unanswered messages, pending approvals); the worker loads each
	// and runs what its state says is due. It runs in the background (it
	// may wait for the projections to catch up): no pass runs before it
	// has returned, so turns kicked meanwhile wait for it. An error is
	// logged and Recover tried again.
	Recover func(ctx context.Context) ([]string, error)
	// LeftTasks, after Recover (the projections have caught up), lists
	// the conversations with a background task whose start has no end:
	// after a crash, tasks whose process is gone (the shell tracker killed
	// it). Each such task gets its end stored (Background.EndLeft) before
	// any pass runs. nil: none is looked for.
	LeftTasks func(ctx context.Context) ([]string, error)
	// LeftTasksEvery is how often a cluster member looks again for tasks
	// whose holder is gone; 0: LeftTasksEvery.
	LeftTasksEvery time.Duration
	// SweepEvery is how often expired approvals are decided (default 5 s);
	// negative: never here, because the caller runs SweepOnce on its own
	// scheduler.
	SweepEvery time.Duration
	// CleanStart says the previous server stopped cleanly (crew serve
	// knows): a run open now was cut by that stop, not by a crash, and
	// resumes without counting as interrupted (R-X-4).
	CleanStart bool
	// RetryDelay is the pause before retrying a conversation whose pass
	// failed n times in a row; nil is RetryDelay (1 s doubling to 30 s).
	RetryDelay func(n int) time.Duration
	// Claim, when several crew processes share one cluster, takes a
	// conversation's lease before its passes run (see Claimer); nil: this
	// process runs every conversation.
	Claim Claimer
	// TurnsInFlight bounds the conversations whose passes run at once
	// (config.yaml turns_in_flight); the others kicked meanwhile wait in
	// a queue, in the order they were kicked. 0: DefaultTurnsInFlight.
	TurnsInFlight int
}

// DefaultTurnsInFlight is the bound on passes running at once unless
// config.yaml says otherwise: a turn mostly waits for its model, so more
// than the cores, yet few enough that a burst of thousands of messages
// on two cores queues instead of running every turn at once, each too
// slowly for the store's timeouts (docs/performance.md).
const DefaultTurnsInFlight = 16

// Worker runs turns. It is started by events on the log — a durable
// consumer of message_received and approval_decided — and by a recovery
// scan at start; which turn to run is always decided from the
// conversation's state, so a duplicate trigger is harmless. One pass at a
// time per conversation; passes of different conversations run in parallel.
type Worker struct {
	cfg    WorkerConfig
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	cc     jetstream.ConsumeContext
	// recovered is closed once Recover has returned its list: passes wait
	// for it.
	recovered chan struct{}

	mu    sync.Mutex
	state map[string]passState
	// failures counts the failed passes in a row per conversation;
	// retrying marks a retry timer running; restarted the conversations
	// the recovery scan found, until their first pass; parked those whose
	// log cannot be read.
	// recovering until the recovery scan has kicked what it found.
	recovering bool
	failures   map[string]int
	retrying   map[string]bool
	restarted  map[string]bool
	parked     map[string]Parked
	// stops cancel the running turn of a conversation (Stop).
	stops map[string]context.CancelCauseFunc

	// failedPasses counts every pass that failed since start (Stats).
	failedPasses atomic.Uint64

	// queue holds the conversations kicked while limit passes ran, in
	// the order they came (state passQueued); inFlight counts the passes
	// holding a slot; resumers are passes that lent their slot while
	// they waited (on a delegated child) and want it back: they go
	// before the queue.
	limit    int
	inFlight int
	queue    list.List // of string
	resumers list.List // of chan struct{}
}

// WorkerStats is what /healthz and doctor show of the worker
// (view.WorkerStats).
type WorkerStats = view.WorkerStats

// Stats is the worker's counters now.
func (w *Worker) Stats() WorkerStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return WorkerStats{FailedPasses: w.failedPasses.Load(), InFlight: w.inFlight, Limit: w.limit,
		Queued: w.queue.Len(), Retrying: len(w.retrying)}
}

type passState int

const (
	passRunning passState = iota + 1
	passDirty             // running, and kicked again meanwhile
	passQueued            // waiting in the queue for a slot
)

// TurnsConsumer is the durable consumer that starts turns (per crew
// process on a shared cluster: events.Log.Durable).
const TurnsConsumer = "turns"

// StartWorker starts the trigger consumer, the recovery scan (in the
// background) and the approval expiry sweep.
func StartWorker(ctx context.Context, cfg WorkerConfig) (*Worker, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SweepEvery == 0 {
		cfg.SweepEvery = 5 * time.Second
	}
	if cfg.TurnsInFlight <= 0 {
		cfg.TurnsInFlight = DefaultTurnsInFlight
	}
	if cfg.Deps.Clock == nil {
		cfg.Deps.Clock = WallClock{}
	}
	w := &Worker{cfg: cfg, state: map[string]passState{}, failures: map[string]int{}, retrying: map[string]bool{},
		restarted: map[string]bool{}, parked: map[string]Parked{}, recovered: make(chan struct{}),
		stops: map[string]context.CancelCauseFunc{}, limit: cfg.TurnsInFlight}
	w.ctx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	turns := jetstream.ConsumerConfig{
		// Each crew process sharing a cluster has its own: every process
		// sees every trigger, and the conversation's lease holder runs it.
		Durable: cfg.Log.Durable(TurnsConsumer),
		FilterSubjects: []string{
			events.Root + ".conv.*." + events.TypeMessageReceived,
			events.Root + ".conv.*." + events.TypeApprovalDecided,
			events.Root + ".conv.*." + events.TypeQuestionAnswered,
			events.Root + ".conv.*." + events.TypeQuestionExpired,
			events.Root + ".conv.*." + events.TypeTaskNotification,
			// A stop stored by another process sharing the cluster
			// cancels the turn running here.
			events.Root + ".conv.*." + events.TypeRunStopRequested,
			events.Root + ".conv.*." + events.TypeTaskStopRequested,
		},
		// Only what arrives from now on: older work is found by Recover.
		DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		MaxAckPending: 10_000,
	}
	if cfg.Log.Node() != "" {
		// A home that stops sharing the cluster leaves nothing behind.
		turns.InactiveThreshold = time.Hour
	}
	cons, err := cfg.Log.JetStream().CreateOrUpdateConsumer(ctx, events.StreamName, turns)
	if err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	w.cc, err = cons.Consume(func(msg jetstream.Msg) {
		conv := events.ScopeOf(msg.Subject()).ID()
		if strings.HasSuffix(msg.Subject(), "."+events.TypeRunStopRequested) {
			w.interrupt(conv)
		}
		if bg := cfg.Deps.Services.Background; bg != nil && (strings.HasSuffix(msg.Subject(), "."+events.TypeRunStopRequested) ||
			strings.HasSuffix(msg.Subject(), "."+events.TypeTaskStopRequested)) {
			// A background task of it may run here: killed if its log
			// says to stop it.
			w.syncTasks(bg, conv)
		}
		w.Kick(events.ScopeOf(msg.Subject()).ID())
		msg.Ack()
	})
	if err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	if cfg.Recover != nil {
		w.recovering = true
		w.wg.Go(w.recover)
	} else {
		close(w.recovered)
	}
	if cfg.SweepEvery > 0 {
		w.wg.Go(w.sweep)
	}
	return w, nil
}

// recover runs Recover until it answers, marks what it found restarted,
// opens the gate for passes and kicks what it found.
func (w *Worker) recover() {
	var ids []string
	for try := 0; ; try++ {
		var err error
		if ids, err = w.cfg.Recover(w.ctx); err == nil {
			if err = w.endLeftTasks(); err == nil {
				break
			}
		}
		if w.ctx.Err() != nil {
			return
		}
		pause := min(time.Second<<min(try, 6), time.Minute)
		w.cfg.Logger.Error("recovery after restart failed; no turn runs until it succeeds", "err", err, "retry_in", pause)
		select {
		case <-time.After(pause):
		case <-w.ctx.Done():
			return
		}
	}
	w.mu.Lock()
	for _, id := range ids {
		w.restarted[id] = true
	}
	w.mu.Unlock()
	close(w.recovered)
	for _, id := range ids {
		w.Kick(id)
	}
	w.mu.Lock()
	w.recovering = false
	w.mu.Unlock()
}

// LeftTasksEvery is how often a cluster member looks again for
// background tasks whose holder is gone: a peer that crashed (its life
// lease lapsed), whether or not it starts again.
const LeftTasksEvery = 5 * time.Second

// endLeftTasks stores the end of every background task a crashed server
// left (LeftTasks), before the gate for passes opens. A conversation whose
// tasks cannot be ended (its log unreadable, the store failing) is logged
// and does not hold the other conversations' turns back: it is tried
// again every LeftTasksEvery until it succeeds. A cluster member looks
// again every LeftTasksEvery for as long as it runs: a peer that looked
// alive at this start (it crashed less than its lease's TTL ago) or dies
// later leaves tasks only it could have ended.
func (w *Worker) endLeftTasks() error {
	bg := w.cfg.Deps.Services.Background
	if w.cfg.LeftTasks == nil || bg == nil {
		return nil
	}
	told := map[string]bool{} // failing conversations already logged
	held, failed, err := w.endLeft(told)
	if err != nil {
		return err
	}
	if failed == 0 && !bg.Clustered() {
		return nil
	}
	every := cmp.Or(w.cfg.LeftTasksEvery, LeftTasksEvery)
	if held > 0 {
		w.cfg.Logger.Info("background tasks left to their live holders; looking again until they end", "tasks", held, "every", every)
	}
	w.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-w.ctx.Done():
				return
			case <-t.C:
			}
			_, failed, err := w.endLeft(told)
			if err != nil && w.ctx.Err() == nil {
				w.cfg.Logger.Error("list the background tasks a crash left", "err", err)
			} else if err == nil && failed == 0 && !bg.Clustered() {
				return
			}
		}
	})
	return nil
}

// endLeft ends what LeftTasks lists; it counts the tasks left for a peer
// that looks alive and the conversations it could not end them in (each
// logged once while it keeps failing: told).
func (w *Worker) endLeft(told map[string]bool) (held, failed int, err error) {
	bg := w.cfg.Deps.Services.Background
	convs, err := w.cfg.LeftTasks(w.ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, conv := range convs {
		ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
		ended, n, err := bg.EndLeft(ctx, conv)
		cancel()
		if err != nil {
			if w.ctx.Err() == nil && !told[conv] {
				told[conv] = true
				w.cfg.Logger.Error("background tasks a crash left not ended; trying again every LeftTasksEvery", "conversation", conv, "err", err)
			}
			failed++
			continue
		}
		delete(told, conv)
		held += n
		if len(ended) > 0 {
			w.cfg.Logger.Warn("background tasks left by a crashed server ended", "conversation", conv, "tasks", ended)
		}
	}
	return held, failed, nil
}

// Recovered is closed once the recovery scan has run: from then on turns
// are answered.
func (w *Worker) Recovered() <-chan struct{} { return w.recovered }

// Close stops consuming and waits for running passes to stop at their next
// boundary (a tool call in flight is cut; it is closed as interrupted on the
// next start) and for pending retries to be dropped.
func (w *Worker) Close() {
	if w.cc != nil {
		w.cc.Stop()
	}
	w.mu.Lock()
	w.cancel() // under mu: no Kick can add to wg once Wait may start
	w.mu.Unlock()
	w.wg.Wait()
}

// syncTasks kills, in the background, conversation's tasks running here
// that its log says to stop (a stop another process stored).
func (w *Worker) syncTasks(bg *Background, conversation string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx.Err() != nil {
		return
	}
	w.wg.Go(func() {
		ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
		defer cancel()
		if err := bg.Sync(ctx, conversation); err != nil {
			w.cfg.Logger.Error("stop a background task", "conversation", conversation, "err", err)
		}
	})
}

// Kick schedules a pass over a conversation: at once when fewer than
// TurnsInFlight passes run, else at the back of the queue. A kick of a
// conversation already queued or running changes nothing but makes a
// running one look again when its pass ends.
func (w *Worker) Kick(id string) {
	if events.ValidID(id) != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx.Err() != nil {
		return
	}
	switch w.state[id] {
	case passRunning, passDirty:
		w.state[id] = passDirty
		return
	case passQueued:
		return
	}
	w.state[id] = passQueued
	w.queue.PushBack(id)
	w.dispatchLocked()
}

// dispatchLocked hands the free slots out: first to passes taking their
// slot back, then to the queue in order. The caller holds w.mu.
func (w *Worker) dispatchLocked() {
	for w.inFlight < w.limit {
		if e := w.resumers.Front(); e != nil {
			w.resumers.Remove(e)
			w.inFlight++
			close(e.Value.(chan struct{}))
			continue
		}
		e := w.queue.Front()
		if e == nil || w.ctx.Err() != nil {
			return
		}
		id := w.queue.Remove(e).(string)
		w.inFlight++
		w.state[id] = passRunning
		w.wg.Go(func() { w.passes(id) })
	}
}

// release gives a slot back.
func (w *Worker) release() {
	w.mu.Lock()
	w.inFlight--
	w.dispatchLocked()
	w.mu.Unlock()
}

// slotKey carries a pass's slot in its context, so that a turn waiting
// on another conversation's pass (its delegated child) can lend it.
type slotKey struct{}

type passSlot struct {
	w *Worker
	// held says the pass holds its slot; lent counts the waits lending
	// it (a turn's delegations may run in parallel).
	mu   sync.Mutex
	held bool
	lent int
}

// lendSlot gives the pass's slot back while it waits on another pass
// (with every slot held by waiting parents, their children would never
// run); the func it returns takes a slot again, ahead of the queue, once
// the last of the pass's waits is over.
func lendSlot(ctx context.Context) (takeBack func()) {
	s, _ := ctx.Value(slotKey{}).(*passSlot)
	if s == nil {
		return func() {}
	}
	s.mu.Lock()
	s.lent++
	if s.held {
		s.held = false
		s.w.release()
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.lent--; s.lent == 0 {
			s.held = s.w.takeSlot()
		}
	}
}

// takeSlot waits for a slot, ahead of the queue; false when the worker
// closed first.
func (w *Worker) takeSlot() bool {
	w.mu.Lock()
	if w.inFlight < w.limit && w.resumers.Len() == 0 {
		w.inFlight++
		w.mu.Unlock()
		return true
	}
	ch := make(chan struct{})
	e := w.resumers.PushBack(ch)
	w.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-w.ctx.Done():
		w.mu.Lock()
		defer w.mu.Unlock()
		select {
		case <-ch: // granted meanwhile
			return true
		default:
			w.resumers.Remove(e)
			return false
		}
	}
}

// Idle reports whether no pass is running, queued or waiting to retry
// (tests and benchmarks wait on it).
func (w *Worker) Idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.recovering && len(w.state) == 0 && len(w.retrying) == 0
}

func (w *Worker) passes(id string) {
	slot := &passSlot{w: w, held: true}
	defer func() {
		slot.mu.Lock()
		if slot.held {
			w.release()
		}
		slot.mu.Unlock()
	}()
	select {
	case <-w.recovered:
	case <-w.ctx.Done():
	}
	for {
		ctx, done, ok := w.claim(id)
		if !ok {
			w.mu.Lock()
			delete(w.state, id)
			w.mu.Unlock()
			return
		}
		again := w.runPasses(context.WithValue(ctx, slotKey{}, slot), id)
		// Given back before the state is cleared, so a kick meanwhile
		// claims afresh; a pass cut by Close leaves the lease to expire
		// (another process takes the run over).
		done(w.ctx.Err() != nil)
		w.mu.Lock()
		if again && w.state[id] == passDirty && w.ctx.Err() == nil {
			w.state[id] = passRunning
			w.mu.Unlock()
			continue
		}
		delete(w.state, id)
		w.mu.Unlock()
		return
	}
}

// runPasses runs passes over id while it is kicked again meanwhile; again
// is false when a retry is scheduled (a kick then waits for it), else a
// kick that comes before the caller clears the state runs another pass.
func (w *Worker) runPasses(ctx context.Context, id string) (again bool) {
	for {
		err := w.safePass(ctx, id)
		if ctx.Err() != nil {
			return true // closing, or the lease was lost: its new holder runs the rest
		}
		if err != nil {
			// The run stays open in the log: retry after a pause (the
			// store may be back by then), or close it when it keeps
			// failing. A kick meanwhile waits for the retry; with none
			// (closed, parked) it is honoured now.
			return !w.failed(id, err)
		}
		w.mu.Lock()
		delete(w.failures, id)
		if w.state[id] == passDirty {
			w.state[id] = passRunning
			w.mu.Unlock()
			continue
		}
		w.mu.Unlock()
		return true // a kick before the state is cleared is honoured
	}
}

func (w *Worker) pass(ctx context.Context, id string) error {
	select {
	case <-w.recovered:
	case <-ctx.Done():
		return ctx.Err()
	}
	conv, err := w.cfg.Convs.Get(ctx, id)
	if err != nil {
		return err
	}
	if w.cfg.Claim != nil {
		// Another process may have written since this one last looked.
		if err := conv.Refresh(ctx); err != nil {
			return err
		}
	}
	if w.takeRestarted(id) {
		if err := w.resumeAfterRestart(ctx, conv); err != nil {
			w.mu.Lock()
			w.restarted[id] = true // the next pass tries again
			w.mu.Unlock()
			return err
		}
	}
	for ctx.Err() == nil {
		var agentID string
		var needs bool
		conv.View(func(st *State) { agentID, needs = st.Agent, st.NeedsTurn() })
		if !needs {
			return nil
		}
		agent, ok := w.agent(agentID)
		if !ok {
			return w.failUnknownAgent(ctx, conv, agentID)
		}
		before := conv.seq()
		tctx, done := w.stoppable(ctx, id)
		turn := NewTurn(agent, w.cfg.Deps, conv)
		turn.worker = w // a delegate's child runs on a pass of its own
		err := turn.Run(tctx)
		cut := stopped(tctx)
		done()
		if err != nil && cut && ctx.Err() == nil {
			continue // the owner's stop: the next turn closes the run stopped
		}
		if err != nil {
			return err
		}
		if conv.seq() == before {
			// Nothing moved: don't spin on a state the turn cannot change.
			return nil
		}
	}
	return ctx.Err()
}

// agent is id as the crew has it now; false: no such agent (or no crew).
func (w *Worker) agent(id string) (Agent, bool) {
	if w.cfg.Deps.Crew == nil {
		return Agent{}, false
	}
	return w.cfg.Deps.Crew.Agent(id)
}

func (c *Conv) seq() uint64 {
	var s uint64
	c.View(func(st *State) { s = st.Seq })
	return s
}

// failUnknownAgent answers a conversation whose agent is not loaded (its
// agent.yaml is broken or gone): a run that fails at once, saying why.
func (w *Worker) failUnknownAgent(ctx context.Context, conv *Conv, agentID string) error {
	runID := w.cfg.Deps.Clock.NewID()
	_, err := conv.Append(ctx, func(st *State) ([]events.Event, error) {
		msg := fmt.Sprintf("agent %q is not loaded: check its agent.yaml (crew doctor lists skipped agents)", agentID)
		return closeRun(st, runID, "", msg, "Not run: the agent's configuration is not loaded, so the run ended. Nothing was run and nothing changed."), nil
	})
	return err
}

// Decide answers an approval (R-GATE-2): approve (always: the tool joins
// the conversation's auto_approve) or deny. The decision takes the
// conversation at once: a second decision gets ErrAlreadyDecided, and an
// answer after the approval expired is recorded as expired, fail closed.
func (w *Worker) Decide(ctx context.Context, conversation, approvalID string, approve, always bool, channel string) (string, error) {
	conv, err := w.cfg.Convs.Get(ctx, conversation)
	if err != nil {
		return "", err
	}
	now := w.cfg.Deps.Clock.Now()
	var decision string
	_, err = conv.Append(ctx, func(st *State) ([]events.Event, error) {
		a := st.ApprovalByID(approvalID)
		if a == nil {
			if d, ok := st.Decided[approvalID]; ok {
				return nil, fmt.Errorf("%w: %s was %s", ErrAlreadyDecided, approvalID, d)
			}
			return nil, fmt.Errorf("%w: %s", ErrUnknownApproval, approvalID)
		}
		if a.Decision != "" {
			return nil, fmt.Errorf("%w: %s was %s", ErrAlreadyDecided, approvalID, a.Decision)
		}
		decision = events.DecisionDenied
		switch {
		case !now.Before(a.ExpiresAt):
			decision, always = events.DecisionExpired, false
		case approve:
			decision = events.DecisionApproved
		default:
			always = false
		}
		return []events.Event{&events.ApprovalDecided{ApprovalID: approvalID, Decision: decision, Always: always, Channel: channel}}, nil
	})
	if err != nil {
		return "", err
	}
	w.Kick(conversation)
	if decision == events.DecisionExpired && approve {
		return decision, fmt.Errorf("%w: %s had expired; it was not run", ErrAlreadyDecided, approvalID)
	}
	return decision, nil
}

// Answer answers a pending question (ask_user) with the owner's words; the
// answer becomes the call's result and the turn carries on. The first
// answer stored wins: a second gets ErrAlreadyAnswered, one after the
// question's time ErrQuestionExpired (and the question is recorded as
// expired if the sweep has not done it yet). An empty or oversized answer
// is ErrBadAnswer, and nothing is stored.
func (w *Worker) Answer(ctx context.Context, conversation, questionID, answer, channel string) error {
	if strings.TrimSpace(answer) == "" {
		return fmt.Errorf("%w: the answer is empty", ErrBadAnswer)
	}
	if len(answer) > MaxAnswerBytes {
		return fmt.Errorf("%w: the answer has %d bytes; at most %d", ErrBadAnswer, len(answer), MaxAnswerBytes)
	}
	if !utf8.ValidString(answer) {
		return fmt.Errorf("%w: the answer is not UTF-8 text", ErrBadAnswer)
	}
	conv, err := w.cfg.Convs.Get(ctx, conversation)
	if err != nil {
		return err
	}
	now := w.cfg.Deps.Clock.Now()
	expired := false
	_, err = conv.Append(ctx, func(st *State) ([]events.Event, error) {
		expired = false
		if outcome, done := st.Asked[questionID]; done {
			if outcome == QuestionWithdrawn {
				return nil, fmt.Errorf("%w: %s was withdrawn; nobody is asked any more", ErrQuestionWithdrawn, questionID)
			}
			if outcome == QuestionExpired {
				return nil, fmt.Errorf("%w: %s expired before this answer; the agent was told nobody answered in time", ErrQuestionExpired, questionID)
			}
			return nil, fmt.Errorf("%w: %s was answered already", ErrAlreadyAnswered, questionID)
		}
		q := st.QuestionByID(questionID)
		if q == nil {
			return nil, fmt.Errorf("%w: %s", ErrUnknownQuestion, questionID)
		}
		if !now.Before(q.ExpiresAt) {
			expired = true
			return []events.Event{&events.QuestionExpired{QuestionID: questionID}}, nil
		}
		return []events.Event{&events.QuestionAnswered{QuestionID: questionID, Answer: answer, Channel: channel}}, nil
	})
	if err != nil {
		return err
	}
	w.Kick(conversation)
	if expired {
		return fmt.Errorf("%w: %s expired before this answer; the agent was told nobody answered in time", ErrQuestionExpired, questionID)
	}
	return nil
}

// Outcome is how an approval or a question of conversation was settled —
// approved, denied, expired, answered — or "" while it waits (or is
// unknown there).
func (w *Worker) Outcome(ctx context.Context, conversation, id string) (string, error) {
	conv, err := w.cfg.Convs.Get(ctx, conversation)
	if err != nil {
		return "", err
	}
	var out string
	conv.View(func(st *State) {
		if d, ok := st.Decided[id]; ok {
			out = d
		}
		if a, ok := st.Asked[id]; ok {
			out = a
		}
	})
	return out, nil
}

// expireQuestion records a pending question as expired (the sweep).
func (w *Worker) expireQuestion(ctx context.Context, conv *Conv, questionID string) error {
	now := w.cfg.Deps.Clock.Now()
	stored, err := conv.Append(ctx, func(st *State) ([]events.Event, error) {
		q := st.QuestionByID(questionID)
		if q == nil || q.Outcome != "" || now.Before(q.ExpiresAt) {
			return nil, nil
		}
		return []events.Event{&events.QuestionExpired{QuestionID: questionID}}, nil
	})
	if err == nil && len(stored) > 0 {
		w.Kick(conv.ID())
	}
	return err
}

// sweep decides expired approvals as expired (handled as deny, R-GATE-3).
func (w *Worker) sweep() {
	t := time.NewTicker(w.cfg.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
			w.SweepOnce(w.ctx)
		}
	}
}

// SweepOnce expires every pending approval and question whose time is up, in the
// conversations loaded in this process (the recovery scan loads every
// conversation with a pending approval).
func (w *Worker) SweepOnce(ctx context.Context) {
	now := w.cfg.Deps.Clock.Now()
	for _, conv := range w.cfg.Convs.loaded() {
		var expired []string
		conv.View(func(st *State) {
			for _, a := range st.Approvals {
				if a.Decision == "" && !now.Before(a.ExpiresAt) {
					expired = append(expired, a.ID)
				}
			}
		})
		for _, id := range expired {
			if _, err := w.Decide(ctx, conv.ID(), id, false, false, "sweep"); err != nil && !errors.Is(err, ErrAlreadyDecided) {
				w.cfg.Logger.Error("expire approval", "conversation", conv.ID(), "approval", id, "err", err)
			}
		}
		var due []string
		conv.View(func(st *State) {
			for _, q := range st.Questions {
				if q.Outcome == "" && !now.Before(q.ExpiresAt) {
					due = append(due, q.ID)
				}
			}
		})
		for _, id := range due {
			if err := w.expireQuestion(ctx, conv, id); err != nil {
				w.cfg.Logger.Error("expire question", "conversation", conv.ID(), "question", id, "err", err)
			}
		}
	}
}

// loaded lists the conversations held in memory.
func (cs *Convs) loaded() []*Conv {
	cs.mu.Lock()
	all := make([]*Conv, 0, len(cs.convs))
	for _, c := range cs.convs {
		all = append(all, c)
	}
	cs.mu.Unlock()
	out := all[:0]
	for _, c := range all {
		c.mu.Lock()
		if c.st != nil {
			out = append(out, c)
		}
		c.mu.Unlock()
	}
	return out
}

// Kicker has a conversation's next pass run: the Worker, which runs it when
// the conversation's state says work is due (a duplicate kick is
// harmless). Inbound and the scheduler kick after they append.
type Kicker interface {
	Kick(conversation string)
}

// KickFunc is a function as a Kicker.
type KickFunc func(conversation string)

// Kick is f(conversation).
func (f KickFunc) Kick(conversation string) { f(conversation) }
