package loop

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"

	"github.com/my-agent-crew/crew/events"
)

// Appender is the part of events.Log that writing needs. Its Redactor
// holds the home's secrets: what a turn shows or hands on (live deltas,
// tool results, declarations, the system prompt, files written for the
// agent) is redacted with it, as every append is.
type Appender interface {
	Reader
	Append(ctx context.Context, scope events.Scope, expect uint64, envs ...events.Envelope) ([]events.Envelope, error)
	Redactor() *events.Redactor
	// Sync makes the appends deferred so far (events.Deferred) durable.
	Sync(ctx context.Context) error
}

var _ Appender = (*events.Log)(nil)

// Convs is the in-process writer of every conversation: one Conv per id,
// each appending under its own lock with the expected last sequence, so
// inbound messages, steers, decisions and the turn itself never interleave
// (R-ES-3). Another process writing the same conversation makes an append
// fail with a conflict; the Conv then re-reads and decides again.
type Convs struct {
	log    Appender
	snaps  Snapshots
	opener Opener

	mu    sync.Mutex
	convs map[string]*Conv
	// recent orders the loaded conversations, most recently used first;
	// beyond keepIdle of them, idle ones are let go (reloaded from their
	// snapshot and tail when next used).
	recent   *list.List // of *Conv
	keepIdle int

	// prepared are the attachments the turns prepared (attach.go).
	prepared preparedImages
	// logger says when a snapshot was discarded (nil: nothing said).
	logger *slog.Logger
}

// DefaultIdleConversations is how many idle conversation states a process
// keeps in memory unless told otherwise.
const DefaultIdleConversations = 1000

// NewConvs returns the writer set over log; snaps may be nil.
func NewConvs(log Appender, snaps Snapshots) *Convs {
	return NewConvsFrom(ConvsConfig{Log: log, Snapshots: snaps})
}

// ConvsConfig is what a crew's conversations are built from.
type ConvsConfig struct {
	Log       Appender
	Snapshots Snapshots // nil: every load reads the conversation's whole subject
	// Opener computes what travels with each turn-opening message (nil:
	// nothing does).
	Opener Opener
	// IdleLimit bounds the conversation states kept in memory
	// (SetIdleLimit); 0: DefaultIdleConversations.
	IdleLimit int
	// Logger says when a load discarded a snapshot it could not read (an
	// older version's, or a damaged one) and rebuilt the state from the
	// log; nil: nothing is said.
	Logger *slog.Logger
}

// NewConvsFrom returns the writer set c describes.
func NewConvsFrom(c ConvsConfig) *Convs {
	cs := &Convs{log: c.Log, snaps: c.Snapshots, opener: c.Opener, logger: c.Logger, convs: map[string]*Conv{}, recent: list.New(), keepIdle: DefaultIdleConversations}
	if c.IdleLimit > 0 {
		cs.SetIdleLimit(c.IdleLimit)
	}
	return cs
}

// Secrets are the home's secrets: the redactor of the log cs writes to.
func (cs *Convs) Secrets() *events.Redactor { return cs.log.Redactor() }

// SetIdleLimit bounds the conversation states kept in memory: past n (at
// least 1) loaded conversations, the least recently used idle ones (no
// open run, nothing queued, no approval pending, nobody waiting on them)
// are dropped. Call it before the first Get.
func (cs *Convs) SetIdleLimit(n int) { cs.keepIdle = max(n, 1) }

// Loaded is how many conversation states are in memory.
func (cs *Convs) Loaded() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.recent.Len()
}

// touch marks c most recently used and lets go of idle conversations past
// the limit. The caller holds cs.mu.
func (cs *Convs) touchLocked(c *Conv) {
	if c.elem == nil {
		c.elem = cs.recent.PushFront(c)
	} else {
		cs.recent.MoveToFront(c.elem)
	}
	for e := cs.recent.Back(); e != nil && cs.recent.Len() > cs.keepIdle; {
		prev := e.Prev()
		if old := e.Value.(*Conv); old != c && old.evictable() {
			cs.recent.Remove(e)
			old.elem = nil
			delete(cs.convs, old.id)
		}
		e = prev
	}
}

// evictable: nothing in flight on c. A holder of c may still use it (its
// state stays with it); the next Get loads the conversation afresh.
func (c *Conv) evictable() bool {
	if !c.mu.TryLock() {
		return false
	}
	defer c.mu.Unlock()
	st := c.st
	return c.waiters == 0 && st != nil && st.OpenRun == "" && len(st.Queued) == 0 && len(st.Steers) == 0 && !st.BusyQueued && pendingApprovals(st) == 0 && st.PendingQuestion() == nil
}

func pendingApprovals(st *State) int {
	n := 0
	for _, a := range st.Approvals {
		if a.Decision == "" {
			n++
		}
	}
	return n
}

// Opening is a turn-opening message about to be stored: an owner's
// message, a job's prompt, a delegated brief or a steer.
type Opening struct {
	Conversation, Agent, Channel string
	Text                         string
	Steer                        bool
	// First: the conversation's first turn-opening message (nothing was
	// said on it before), what the "earlier, on this topic" note answers.
	First bool
	// Told is what the conversation has been told of each memory item so
	// far, read back from the messages already stored.
	Told map[string]events.NoteTold
	// Canvas is what the conversation knows of each canvas (R-CTX-3).
	Canvas map[string]CanvasMark
}

// Opened is what an Opener adds to the message: the turn notes and, for a
// kit command ("/name args"), its name and the prompt the model reads.
type Opened struct {
	Notes       *events.TurnNotes
	CanvasNotes *events.CanvasNotes
	Command     string
	Prompt      string
}

// Opener computes what travels with a turn-opening message. It runs under
// the conversation's lock, in the same step that stores the message, so the
// notes are computed against exactly what the stored history told. It must
// not fail: a message whose notes could not be made is stored without them.
type Opener func(ctx context.Context, o Opening) Opened

// SetOpener installs the opener; call it before the first Append.
func (cs *Convs) SetOpener(o Opener) { cs.opener = o }

// Get returns the conversation's writer, loading its state on first use.
func (cs *Convs) Get(ctx context.Context, id string) (*Conv, error) {
	if err := events.ValidID(id); err != nil {
		return nil, err
	}
	cs.mu.Lock()
	c, ok := cs.convs[id]
	if !ok {
		c = &Conv{id: id, convs: cs}
		cs.convs[id] = c
	}
	cs.mu.Unlock()
	c.mu.Lock()
	if c.st == nil {
		st, err := loadState(ctx, cs.log, cs.snaps, id, cs.logger)
		if err != nil {
			c.mu.Unlock()
			return nil, err
		}
		c.st = st
	}
	c.mu.Unlock()
	cs.mu.Lock()
	if cs.convs[id] == c {
		cs.touchLocked(c)
	}
	cs.mu.Unlock()
	return c, nil
}

// Conv serializes the writes of one conversation and holds its state.
type Conv struct {
	id    string
	convs *Convs
	mu    sync.Mutex
	st    *State
	// changed is closed (and replaced) whenever st changes, waking Wait.
	changed chan struct{}
	// waiters counts the Waits in progress (under mu); elem is c's place
	// in Convs.recent (under Convs.mu), nil once let go.
	waiters int
	elem    *list.Element
	// unsynced: an append deferred its fsync (events.Deferred) and no
	// durable append of this conversation has covered it yet.
	unsynced bool
}

// ID is the conversation id.
func (c *Conv) ID() string { return c.id }

// Decide is a command on the conversation: it reads the current state and
// returns the events to append (none: nothing to do), or an error to refuse.
// It must not keep st.
type Decide func(st *State) ([]events.Event, error)

// Append runs decide on the current state and appends its events with the
// state's sequence as expectation, then applies them. On a conflict (another
// writer) it catches up from the log and decides again, at most 3 times.
func (c *Conv) Append(ctx context.Context, decide Decide) ([]events.Envelope, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.notify() // a spurious wake is harmless: Wait re-checks
	for attempt := 0; ; attempt++ {
		evs, err := decide(c.st)
		if err != nil || len(evs) == 0 {
			return nil, err
		}
		c.open(ctx, evs)
		envs := make([]events.Envelope, len(evs))
		for i, e := range evs {
			if envs[i], err = events.New(e); err != nil {
				return nil, err
			}
		}
		stored, err := c.convs.log.Append(ctx, events.Conv(c.id), c.st.Seq, envs...)
		for _, env := range stored {
			if aerr := c.st.Apply(env); aerr != nil {
				return stored, aerr
			}
		}
		if errors.Is(err, events.ErrConflict) && len(stored) == 0 && attempt < 3 {
			if _, cerr := c.st.CatchUp(ctx, c.convs.log); cerr != nil {
				return nil, cerr
			}
			continue
		}
		if err != nil {
			c.unsynced = c.unsynced || (len(stored) > 0 && events.IsDeferred(ctx))
			return stored, fmt.Errorf("conversation %s: %w", c.id, err)
		}
		// A durable append covers the deferred ones before it.
		c.unsynced = events.IsDeferred(ctx)
		return stored, nil
	}
}

// Sync makes the conversation's deferred appends (events.Deferred)
// durable, unless a durable append of its own has since.
func (c *Conv) Sync(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.unsynced {
		return nil
	}
	if err := c.convs.log.Sync(ctx); err != nil {
		return err
	}
	c.unsynced = false
	return nil
}

// open fills in what travels with each turn-opening message of evs that
// does not carry it yet (a retried decision computes it afresh).
func (c *Conv) open(ctx context.Context, evs []events.Event) {
	o := c.convs.opener
	if o == nil {
		return
	}
	agent, channel := c.st.Agent, c.st.Channel
	told := make(map[string]events.NoteTold, len(c.st.Told))
	for k, v := range c.st.Told {
		told[k] = v
	}
	marks := maps.Clone(c.st.Canvas)
	if marks == nil {
		marks = map[string]CanvasMark{}
	}
	first := len(c.st.Messages) == 0 && len(c.st.Queued) == 0 && len(c.st.Steers) == 0 && c.st.OpenRun == ""
	for _, e := range evs {
		var op Opened
		switch e := e.(type) {
		case *events.ConversationOpened:
			agent, channel = e.Agent, e.Channel
			continue
		case *events.MessageReceived:
			isFirst := first
			first = false
			if e.TurnNotes != nil || e.Prompt != "" {
				continue
			}
			op = o(ctx, Opening{Conversation: c.id, Agent: agent, Channel: channel, Text: e.Text, First: isFirst, Told: told, Canvas: marks})
			e.TurnNotes, e.CanvasNotes, e.Command, e.Prompt = op.Notes, op.CanvasNotes, op.Command, op.Prompt
		case *events.SteerReceived:
			// With messages queued during the run the steer carries no
			// notes: it reaches the model at the next tool boundary, before
			// those messages, whose notes its own would build on.
			// A kit command taken in as a steer carries its prompt either way.
			// Team mail is never a kit command: another agent's words.
			if e.TurnNotes != nil || e.Prompt != "" || (e.Team != nil && len(c.st.Queued) > 0) {
				continue
			}
			op = o(ctx, Opening{Conversation: c.id, Agent: agent, Channel: channel, Text: e.Text, Steer: true, Told: told, Canvas: marks})
			if e.Team == nil {
				e.Command, e.Prompt = op.Command, op.Prompt
			}
			if len(c.st.Queued) > 0 {
				continue
			}
			e.TurnNotes, e.CanvasNotes = op.Notes, op.CanvasNotes
		default:
			continue
		}
		if op.Notes != nil {
			for _, t := range op.Notes.Told {
				told[t.Key] = t
			}
		}
		if op.CanvasNotes != nil {
			for _, t := range op.CanvasNotes.Told {
				m := marks[t.Artifact]
				m.Told = max(m.Told, t.Version)
				if t.Whole {
					m.Seen = max(m.Seen, t.Version)
				}
				marks[t.Artifact] = m
			}
		}
	}
}

// View calls f with the current state under the conversation's lock. f must
// not keep st or anything it points to.
func (c *Conv) View(f func(st *State)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c.st)
}

// Refresh catches the state up with the log (events another process
// appended) and saves a snapshot when the history grew a lot.
func (c *Conv) Refresh(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.notify()
	_, err := c.st.CatchUp(ctx, c.convs.log)
	return err
}

// Wait returns once cond holds for the conversation's state, checking it
// now and after every change (an append here, a Refresh), or when ctx ends.
// cond runs under the conversation's lock and must not keep st.
func (c *Conv) Wait(ctx context.Context, cond func(st *State) bool) error {
	c.mu.Lock()
	c.waiters++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.waiters--
		c.mu.Unlock()
	}()
	for {
		c.mu.Lock()
		ok := cond(c.st)
		if c.changed == nil {
			c.changed = make(chan struct{})
		}
		changed := c.changed
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// notify wakes every Wait; the caller holds c.mu, so a woken Wait checks
// the state after the change.
func (c *Conv) notify() {
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
}

// Snapshot saves the current state as the conversation's snapshot.
func (c *Conv) Snapshot() error {
	if c.convs.snaps == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return SaveSnapshot(c.convs.snaps, c.st)
}
