package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/nats-io/nats.go/jetstream"
	"go.etcd.io/bbolt"
)

// Runner feeds projections from their durable consumers, one goroutine
// each, until Close.
type Runner struct {
	log    *events.Log
	db     *bbolt.DB
	logger *slog.Logger
	cfg    config
	cancel context.CancelFunc
	wg     sync.WaitGroup

	commits atomic.Uint64 // transactions committed by the groups
	// caughtUp is 1 + the highest sequence CatchingUp found every
	// projection caught up with (0: none yet).
	caughtUp atomic.Uint64

	mu      sync.Mutex
	closed  bool
	changed chan struct{} // closed and replaced whenever a worker's state changes
	workers []*worker
	groups  []*group
	// waits counts the WaitFor callers by the sequence each waits for
	// (not yet applied when it began); waited is closed and replaced
	// when one begins, so a group holding a batch open commits at once.
	waits  map[uint64]int
	waited chan struct{}
}

// group is the projections one consumer feeds: those whose checkpoints
// were equal at Open (all of them, normally). Each event is read and
// decoded once for the group, and each batch is one bbolt transaction
// holding every member's changes and checkpoint. A projection behind the
// others (new in this build, or rebuilt) is its own group and catches up
// beside them without holding them.
type group struct {
	consumer string // the durable name: its first member's
	cons     jetstream.Consumer
	members  []*worker
}

// worker is one projection's state. Fields after p are guarded by
// Runner.mu.
type worker struct {
	p Projection

	checkpoint uint64
	running    bool
	skipped    uint64
	err        error
}

// config holds what tests change.
type config struct {
	// ackWait of the consumers; zero is the server default (30s).
	ackWait time.Duration
	// afterCommit runs between a batch's commit and its ack, once per
	// member with the batch's last sequence; an error means the ack is
	// lost (as if the process died there): the batch is not acknowledged.
	afterCommit func(name string, seq uint64) error
	// batch caps the events of one transaction; zero is batchMax.
	batch int
	// linger is how long a batch short of batch stays open for more
	// events when nobody waits for them; zero is lingerMax.
	linger time.Duration
	// lose drops a delivery before the Runner sees it, as a connection
	// that dies with a pull's messages in flight does (the server counts
	// them delivered); nil drops none.
	lose func(seq uint64) bool
}

// Status is one projection's progress, for `crew doctor` and /healthz.
type Status struct {
	Name       string `json:"name"`
	Checkpoint uint64 `json:"checkpoint"` // last stream sequence applied
	LastSeq    uint64 `json:"last_seq"`   // the stream's last sequence
	Lag        uint64 `json:"lag"`        // LastSeq - Checkpoint
	Running    bool   `json:"running"`
	// Skipped counts redelivered events skipped since Open (already
	// applied: a lost ack).
	Skipped uint64 `json:"skipped"`
	// Error says why the projection stopped; ErrorSubject and ErrorSeq
	// name the event it stopped at, when there is one.
	Error        string `json:"error,omitempty"`
	ErrorSubject string `json:"error_subject,omitempty"`
	ErrorSeq     uint64 `json:"error_seq,omitempty"`
}

// Open starts one durable consumer ("proj_<name>" of its first member, all
// of "crew.>", acked per batch) and one goroutine per group of projections
// at the same checkpoint. A consumer out of step with the group's
// checkpoint is recreated to start after the checkpoint. A projection
// whose checkpoint is beyond the stream's end is not started; Status
// reports it.
func Open(ctx context.Context, log *events.Log, db *bbolt.DB, logger *slog.Logger, ps ...Projection) (*Runner, error) {
	return open(ctx, log, db, logger, config{}, ps...)
}

func open(ctx context.Context, log *events.Log, db *bbolt.DB, logger *slog.Logger, cfg config, ps ...Projection) (*Runner, error) {
	if err := validate(ps); err != nil {
		return nil, fmt.Errorf("open projections: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	info, err := log.Stream().Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("open projections: stream info: %w", err)
	}
	last := info.State.LastSeq
	// A conversation parked at an event an older build could not read is
	// read again in full once this build can.
	again, err := readable(ctx, log, db)
	if err != nil {
		return nil, fmt.Errorf("open projections: %w", err)
	}
	if again {
		logger.Info("events an older build could not decode are readable now; rebuilding the projections")
		if err := forgetUndecodable(db); err != nil {
			return nil, fmt.Errorf("open projections: %w", err)
		}
		for _, p := range ps {
			if err := Rebuild(ctx, log, db, p); err != nil {
				return nil, fmt.Errorf("open projections: %w", err)
			}
		}
	}
	for _, p := range ps {
		reset, err := upgrade(db, p)
		if err != nil {
			return nil, fmt.Errorf("open projections: %w", err)
		}
		if reset {
			logger.Info("projection changed in this build; projecting it again from the start", logProjection, p.Name(), "version", versionOf(p))
		}
	}
	r := &Runner{log: log, db: db, logger: logger, cfg: cfg, changed: make(chan struct{}), waits: map[uint64]int{}, waited: make(chan struct{})}
	at := map[uint64]*group{}
	for _, p := range ps {
		w := &worker{p: p}
		r.workers = append(r.workers, w)
		if w.checkpoint, err = Checkpoint(db, p.Name()); err != nil {
			return nil, fmt.Errorf("open projections: %w", err)
		}
		if w.checkpoint > last {
			r.fail(w, fmt.Errorf("checkpoint %d is beyond the stream's last sequence %d (another home's database?): rebuild the projection", w.checkpoint, last))
			continue
		}
		g := at[w.checkpoint]
		if g == nil {
			g = &group{consumer: consumerName(log, p.Name())}
			at[w.checkpoint] = g
			r.groups = append(r.groups, g)
		}
		g.members = append(g.members, w)
	}
	for _, g := range r.groups {
		if g.cons, err = r.consumer(ctx, g.consumer, g.members[0].checkpoint); err != nil {
			return nil, fmt.Errorf("open projections: %w", err)
		}
		// A member's own consumer from an earlier start (it led a group
		// then) would hold its messages on the server for nothing.
		for _, w := range g.members[1:] {
			err := log.Stream().DeleteConsumer(ctx, consumerName(log, w.p.Name()))
			if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
				return nil, fmt.Errorf("open projections: delete consumer %s: %w", consumerName(log, w.p.Name()), err)
			}
		}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	for _, g := range r.groups {
		for _, w := range g.members {
			w.running = true
		}
		r.wg.Go(func() { r.run(runCtx, g) })
	}
	return r, nil
}

// consumer returns the durable consumer named durable, recreated to start
// at checkpoint+1 unless its ack floor is the checkpoint with nothing
// pending.
func (r *Runner) consumer(ctx context.Context, durable string, checkpoint uint64) (jetstream.Consumer, error) {
	stream := r.log.Stream()
	cons, err := stream.Consumer(ctx, durable)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
	case err != nil:
		return nil, fmt.Errorf("consumer %s: %w", durable, err)
	default:
		info := cons.CachedInfo()
		if info.AckFloor.Stream == checkpoint && info.NumAckPending == 0 &&
			info.Config.FilterSubject == allEvents && info.Config.AckPolicy == jetstream.AckAllPolicy &&
			info.Config.MaxAckPending == maxAckPending && info.Config.MemoryStorage == r.memoryConsumer() {
			return cons, nil
		}
		r.logger.Info("projection consumer out of step with its checkpoint; recreating it",
			logConsumer, durable, "ack_floor", info.AckFloor.Stream, "ack_pending", info.NumAckPending, "checkpoint", checkpoint)
		if err := stream.DeleteConsumer(ctx, durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("delete consumer %s: %w", durable, err)
		}
	}
	cfg := jetstream.ConsumerConfig{
		Durable:       durable,
		Description:   "projections",
		FilterSubject: allEvents,
		AckPolicy:     jetstream.AckAllPolicy,
		AckWait:       r.cfg.ackWait,
		MaxAckPending: maxAckPending,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		MemoryStorage: r.memoryConsumer(),
	}
	if checkpoint > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, checkpoint+1
	}
	cons, err = stream.CreateConsumer(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create consumer %s from %d: %w", durable, checkpoint+1, err)
	}
	return cons, nil
}

// memoryConsumer reports whether the consumers keep their state (what was
// delivered and acknowledged) in the server's memory rather than in files
// of its own: on the embedded server, which lives no longer than this
// process, and whose consumer file would otherwise be written anew (a
// temporary file created, written and renamed) up to ten times a second
// while events flow — about a tenth of the projections' CPU per live
// event (docs/performance.md). The bbolt checkpoint is the truth either
// way: a consumer the server no longer has at Open is made again from it.
func (r *Runner) memoryConsumer() bool {
	return r.log.Embedded()
}

// allEvents is every projection's filter.
const allEvents = events.Root + ".>"

// Log attribute keys.
const (
	logProjection = "projection"
	logConsumer   = "consumer"
	logSubject    = "subject"
	logSeq        = "seq"
	logErr        = "err"
)

// batchMax is the most events one bbolt transaction applies. A batch is
// whatever the consumer has already delivered, up to batchMax: catching up
// fills it. A batch short of batchMax (live events: a step's four come
// within a millisecond or two, a turn's steps a millisecond apart) stays
// open for what follows for at most lingerMax, and commits at once when a
// WaitFor caller waits for one of its events (a page, a live feed, a read
// of one's writes): a reader that waits sees an event as soon as before,
// one that does not sees it at most lingerMax later, and a busy turn's
// steps cost one transaction every lingerMax instead of one each (a
// commit of the ten projections is about 0.6 ms of CPU: at 5 ms it was
// 0.15 ms of a step's 1.2, docs/performance.md). maxAckPending lets one
// batch be fetched while the one before is applied.
const (
	batchMax      = 4000
	lingerMax     = 50 * time.Millisecond
	maxAckPending = 2 * batchMax
)

// delivery is one message, read (metadata) and decoded by the pump beside
// the goroutine applying the batch before it, or the consumer's terminal
// error.
type delivery struct {
	msg     jetstream.Msg
	seq     uint64
	env     events.Envelope
	derr    error // from DecodeStored
	metaErr error // the message's metadata could not be read
	err     error
}

// read fills in d's sequence and envelope, its payload decoded when
// payload says one of the group's members is given an event of its
// subject's scope kind and type (an event none reads, such as the
// ledger's reservations, costs its envelope alone).
func (d *delivery) read(payload func(kind, typ string) bool) {
	meta, err := d.msg.Metadata()
	if err != nil {
		d.metaErr = err
		return
	}
	d.seq = meta.Sequence.Stream
	d.env, d.derr = events.DecodeStored(d.msg.Subject(), d.seq, d.msg.Data())
	if d.derr == nil && payload(subjectKind(d.env.Subject), d.env.Type) {
		d.env = d.env.Decoded()
	}
}

// wanted reports whether one of g's members is given events of kind and
// typ (a member stopped since is still counted: the answer may only be
// too wide).
func (g *group) wanted(kind, typ string) bool {
	for _, w := range g.members {
		if wants(w.p, kind, typ) {
			return true
		}
	}
	return false
}

// run feeds g until ctx ends or g stops. A gap in what the consumer
// delivers (a pull's messages lost with a connection, which the server
// counts delivered and the next batch's AckAll acknowledges) is never
// passed over: the consumer is made again to deliver from the checkpoint.
func (r *Runner) run(ctx context.Context, g *group) {
	var again uint64 // the event a gap was met at before, with none applied since
	for {
		gap := r.consume(ctx, g)
		if gap == nil {
			return
		}
		r.logger.Warn("projection consumer skipped events (deliveries lost with a connection); reading again from the checkpoint",
			logConsumer, g.consumer, "want", gap.want, "got", gap.got)
		if gap.want == again {
			// Twice at the same event: the stream may not have it.
			if _, err := r.log.Stream().GetMsg(ctx, gap.want); errors.Is(err, jetstream.ErrMsgNotFound) {
				r.failGroup(g, fmt.Errorf("event %d is missing from the stream (removed from the log?): %w", gap.want, gap))
				return
			}
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
			}
		}
		again = gap.want
		cons, err := r.remake(ctx, g.consumer, gap.want-1)
		if err != nil {
			if ctx.Err() != nil {
				r.stopGroup(g)
				return
			}
			r.failGroup(g, err)
			return
		}
		g.cons = cons
	}
}

// remakeFor is how long remake retries while the cluster cannot make a
// consumer (a leader being elected after a server's loss).
const remakeFor = 5 * time.Minute

// remake deletes the consumer durable and makes it again to deliver from
// checkpoint+1 — even when the server shows nothing pending: it may have
// lost what it sent with its consumer leader. It retries until remakeFor
// has passed or ctx ends.
func (r *Runner) remake(ctx context.Context, durable string, checkpoint uint64) (jetstream.Consumer, error) {
	deadline := time.Now().Add(remakeFor)
	for pause := 100 * time.Millisecond; ; pause = min(2*pause, 5*time.Second) {
		err := r.log.Stream().DeleteConsumer(ctx, durable)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			err = nil
		}
		if err == nil {
			var cons jetstream.Consumer
			if cons, err = r.consumer(ctx, durable, checkpoint); err == nil {
				return cons, nil
			}
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return nil, fmt.Errorf("make consumer %s again from %d: %w", durable, checkpoint+1, err)
		}
		r.logger.Warn("cannot make the projection consumer again; retrying", logConsumer, durable, logErr, err)
		select {
		case <-time.After(pause):
		case <-ctx.Done():
		}
	}
}

// gapError is a delivery past the next event a group's members need.
type gapError struct{ want, got uint64 }

func (e *gapError) Error() string {
	return fmt.Sprintf("delivery gap: want event %d, got %d", e.want, e.got)
}

// consume feeds g from its consumer until ctx ends, g stops (nil), or a
// delivery skips events (the gap; what came before it is applied).
func (r *Runner) consume(ctx context.Context, g *group) *gapError {
	size := r.cfg.batch
	if size <= 0 {
		size = batchMax
	}
	// A missed heartbeat (a busy server, a connection made again) is not
	// an end: the iterator pulls again by itself, so Next is not to
	// return it (it would stop every projection for good).
	msgs, err := g.cons.Messages(jetstream.PullMaxMessages(size), jetstream.WithMessagesErrOnMissingHeartbeat(false))
	if err != nil {
		r.failGroup(g, fmt.Errorf("consume: %w", err))
		return nil
	}
	// The pump hands messages over as they come; the loop below takes
	// every one already handed over as one batch.
	ch := make(chan delivery, size)
	pumpCtx, stopPump := context.WithCancel(ctx)
	pumpDone := make(chan struct{})
	go func() {
		defer close(pumpDone)
		for {
			msg, err := msgs.Next(jetstream.NextContext(pumpCtx))
			d := delivery{msg: msg, err: err}
			if err == nil {
				d.read(g.wanted)
				if r.cfg.lose != nil && d.metaErr == nil && r.cfg.lose(d.seq) {
					continue
				}
			}
			select {
			case ch <- d:
			case <-pumpCtx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() { stopPump(); msgs.Stop(); <-pumpDone }()
	linger := r.cfg.linger
	if linger <= 0 {
		linger = lingerMax
	}
	batch := make([]delivery, 0, size)
	for {
		batch = batch[:0]
		var last error
		select {
		case d := <-ch:
			if last = d.err; last == nil {
				batch = append(batch, d)
			}
		case <-ctx.Done():
			r.stopGroup(g)
			return nil
		}
	fill:
		for last == nil && len(batch) < size {
			select {
			case d := <-ch:
				if last = d.err; last == nil {
					batch = append(batch, d)
				}
			default:
				break fill
			}
		}
		if last == nil && len(batch) > 0 && len(batch) < size {
			last = r.linger(ctx, ch, &batch, size, linger)
		}
		if len(batch) > 0 {
			err := r.handle(g, batch)
			// The array is reused: what the next, smaller batches leave
			// of it would hold this one's events (and their messages)
			// for as long as the process lives.
			clear(batch)
			if err != nil {
				if gap := (*gapError)(nil); errors.As(err, &gap) {
					return gap
				}
				r.failGroup(g, err)
				return nil
			}
			if len(r.active(g)) == 0 {
				return nil // each member stopped at its own event
			}
		}
		if last != nil {
			if ctx.Err() != nil {
				r.stopGroup(g)
				return nil
			}
			// Next retries transient trouble (missed heartbeats,
			// reconnects) itself; what it returns is terminal, such as
			// the consumer being deleted under us.
			r.failGroup(g, fmt.Errorf("consume %s: %w", g.consumer, last))
			return nil
		}
	}
}

// linger keeps *batch open for the deliveries that follow, until it holds
// size, wait has passed, a WaitFor caller waits for one of its events, ctx
// ends or the consumer fails (its error returned, as consume's last).
func (r *Runner) linger(ctx context.Context, ch <-chan delivery, batch *[]delivery, size int, wait time.Duration) error {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var newest uint64
	for _, d := range *batch {
		newest = max(newest, d.seq)
	}
	for {
		waited, wanted := r.wanted(newest)
		if wanted {
			return nil
		}
		select {
		case d := <-ch:
			if d.err != nil {
				return d.err
			}
			*batch = append(*batch, d)
			newest = max(newest, d.seq)
			if len(*batch) >= size {
				return nil
			}
		case <-waited:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return nil // the batch is applied; consume's next select stops the group
		}
	}
}

// wanted reports whether a WaitFor caller waits for an event at or before
// seq, with the channel closed when another one begins.
func (r *Runner) wanted(seq uint64) (<-chan struct{}, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for w := range r.waits {
		if w <= seq {
			return r.waited, true
		}
	}
	return r.waited, false
}

// active returns g's members that have not stopped.
func (r *Runner) active(g *group) []*worker {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*worker
	for _, w := range g.members {
		if w.err == nil {
			out = append(out, w)
		}
	}
	return out
}

// handle applies a batch of messages to g's members in one bbolt
// transaction with their checkpoints (skipping redeliveries already
// applied) and acks it after the commit: the newest message's ack covers
// the batch (AckAll). A member that fails at an event stops there: the
// events before it are committed for every member, and the others go on
// with the rest of the batch. An error returned stops the whole group.
func (r *Runner) handle(g *group, batch []delivery) error {
	for len(batch) > 0 {
		active := r.active(g)
		if len(active) == 0 {
			return nil
		}
		n, failed, err := r.applyBatch(active, batch)
		if err == nil {
			r.committed(active, batch)
			return nil
		}
		if gap := (*gapError)(nil); errors.As(err, &gap) {
			// The events before the gap are committed on their own;
			// nothing after it is acknowledged.
			if n > 0 {
				if _, _, err := r.applyBatch(active, batch[:n]); err != nil {
					return err
				}
				r.committed(active, batch[:n])
			}
			return err
		}
		if failed == nil {
			return err // not one member's: metadata, or the commit itself
		}
		if n > 0 {
			// bbolt has no savepoints: commit the events before the
			// failing one on their own.
			if _, _, err := r.applyBatch(active, batch[:n]); err != nil {
				return err
			}
			r.committed(active, batch[:n])
		}
		r.fail(failed, err)
		batch = batch[n:]
	}
	return nil
}

// applyBatch applies batch to members in one transaction, each event
// decoded once (by the pump), through a recordCache. On an error nothing
// is committed; it returns how many messages came before the failing one
// and the member that failed (nil when the failure is not one member's).
func (r *Runner) applyBatch(members []*worker, batch []delivery) (int, *worker, error) {
	tx, err := r.db.Begin(true)
	if err != nil {
		return 0, nil, fmt.Errorf("projections: begin: %w", err)
	}
	defer tx.Rollback()
	cps := make([]uint64, len(members))
	for j, w := range members {
		if cps[j], err = readCheckpoint(tx, w.p.Name()); err != nil {
			return 0, w, &ApplyError{Projection: w.p.Name(), Subject: batch[0].msg.Subject(), Err: err}
		}
		if err := ensureBuckets(tx, w.p); err != nil {
			return 0, w, &ApplyError{Projection: w.p.Name(), Subject: batch[0].msg.Subject(), Err: err}
		}
	}
	ptx, flush := cacheRecords(tx)
	start := slices.Clone(cps)
	for i := range batch {
		d := &batch[i]
		if d.metaErr != nil {
			return i, nil, &ApplyError{Projection: members[0].p.Name(), Subject: d.msg.Subject(), Err: fmt.Errorf("message metadata: %w", d.metaErr)}
		}
		seq := d.seq
		if next := slices.Min(cps) + 1; seq > next {
			return i, nil, &gapError{want: next, got: seq}
		}
		kind := subjectKind(d.msg.Subject())
		for j, w := range members {
			if seq <= cps[j] {
				continue
			}
			if de := (*events.DecodeError)(nil); errors.As(d.derr, &de) {
				if err := skipUndecodable(ptx, w.p, de); err != nil {
					return i, w, err
				}
			} else if d.derr != nil {
				return i, w, d.derr
			} else if wants(w.p, kind, d.env.Type) {
				if err := apply(ptx, w.p, d.env); err != nil {
					return i, w, err
				}
			}
			cps[j] = seq
		}
	}
	if err := flush(); err != nil {
		return len(batch), nil, fmt.Errorf("projections: write records: %w", err)
	}
	for j, w := range members {
		if cps[j] != start[j] {
			if err := writeCheckpoint(tx, w.p.Name(), cps[j]); err != nil {
				return len(batch), nil, &ApplyError{Projection: w.p.Name(), Seq: cps[j], Err: fmt.Errorf("write checkpoint: %w", err)}
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return len(batch), nil, fmt.Errorf("projections: commit: %w", err)
	}
	r.commits.Add(1)
	return len(batch), nil, nil
}

// committed records members' progress through the committed messages done
// and acks them.
func (r *Runner) committed(members []*worker, done []delivery) {
	var newest jetstream.Msg
	var last uint64
	for _, d := range done {
		if newest == nil || d.seq > last {
			newest, last = d.msg, d.seq
		}
	}
	applied := false
	r.mu.Lock()
	for _, w := range members {
		if last > w.checkpoint {
			w.checkpoint, applied = last, true
		} else {
			w.skipped += uint64(len(done))
		}
	}
	r.notifyLocked()
	r.mu.Unlock()
	if applied && r.cfg.afterCommit != nil {
		for _, w := range members {
			if err := r.cfg.afterCommit(w.p.Name(), last); err != nil {
				r.logger.Warn("ack lost after commit", logProjection, w.p.Name(), logSeq, last, logErr, err)
				return
			}
		}
	}
	// A redelivery can arrive behind newer messages: ack the newest, which
	// covers every one before it.
	if err := newest.Ack(); err != nil {
		// Harmless: the redeliveries will be skipped.
		r.logger.Warn("ack failed; the redelivery will be skipped", logSeq, last, logErr, err)
	}
}

// failGroup stops every running member of g with err.
func (r *Runner) failGroup(g *group, err error) {
	for _, w := range r.active(g) {
		r.fail(w, err)
	}
}

// stopGroup marks g's members stopped by Close.
func (r *Runner) stopGroup(g *group) {
	for _, w := range g.members {
		r.stopped(w)
	}
}

// fail stops w with err and logs it, once.
func (r *Runner) fail(w *worker, err error) {
	r.mu.Lock()
	w.running, w.err = false, err
	r.notifyLocked()
	r.mu.Unlock()
	subject, seq := errorEvent(err)
	r.logger.Error("projection stopped", logProjection, w.p.Name(), logSubject, subject, logSeq, seq, logErr, err)
}

// stopped marks w stopped by Close.
func (r *Runner) stopped(w *worker) {
	r.mu.Lock()
	w.running = false
	r.notifyLocked()
	r.mu.Unlock()
}

func (r *Runner) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// errorEvent returns the subject and sequence an error is about, if any.
func errorEvent(err error) (string, uint64) {
	var ae *ApplyError
	if errors.As(err, &ae) {
		return ae.Subject, ae.Seq
	}
	var de *events.DecodeError
	if errors.As(err, &de) {
		return de.Subject, de.Seq
	}
	return "", 0
}

// Ready reports whether every projection has applied stream sequence seq
// and none has stopped, with every projection's Status.
func (r *Runner) Ready(ctx context.Context, seq uint64) (bool, []Status) {
	statuses := r.Status(ctx)
	ready := true
	for _, s := range statuses {
		if s.Checkpoint < seq || s.Error != "" {
			ready = false
		}
	}
	return ready, statuses
}

// CatchingUp says how many events the projections still have to apply
// of the log up to seq (what it held at start, for /healthz); false once
// they have (or stopped: then /healthz says why). Once caught up with a
// sequence it answers at once for it.
func (r *Runner) CatchingUp(ctx context.Context, seq uint64) (uint64, bool) {
	if r.caughtUp.Load() > seq {
		return 0, false
	}
	ready, statuses := r.Ready(ctx, seq)
	var left uint64
	for _, st := range statuses {
		if st.Error != "" {
			return 0, false
		}
		if st.Checkpoint < seq {
			left = max(left, seq-st.Checkpoint)
		}
	}
	if ready {
		for {
			old := r.caughtUp.Load()
			if old > seq || r.caughtUp.CompareAndSwap(old, seq+1) {
				break
			}
		}
	}
	return left, !ready
}

// Status reports every projection's progress. If the stream cannot be
// asked for its last sequence, LastSeq and Lag are 0 and Error says so
// (unless the projection has stopped for another reason).
func (r *Runner) Status(ctx context.Context) []Status {
	var last uint64
	info, streamErr := r.log.Stream().Info(ctx)
	if streamErr == nil {
		last = info.State.LastSeq
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Status, 0, len(r.workers))
	for _, w := range r.workers {
		s := Status{Name: w.p.Name(), Checkpoint: w.checkpoint, LastSeq: last, Running: w.running, Skipped: w.skipped}
		if last > w.checkpoint {
			s.Lag = last - w.checkpoint
		}
		switch {
		case w.err != nil:
			s.Error = w.err.Error()
			s.ErrorSubject, s.ErrorSeq = errorEvent(w.err)
		case streamErr != nil:
			s.Error = fmt.Sprintf("stream info: %v", streamErr)
		}
		out = append(out, s)
	}
	return out
}

// Freshness is how a reader of the read models waits for them to catch
// up (read your writes): WaitFor returns once every projection has
// applied stream sequence seq. The Runner is the one; a reader given none
// reads what the projections have.
type Freshness interface {
	WaitFor(ctx context.Context, seq uint64) error
}

// ReadYourWrites returns once f has seen every projection apply all the
// log held when it was called: what a caller looks up by id was stored
// before the request that names it.
func ReadYourWrites(ctx context.Context, log *events.Log, f Freshness) error {
	last, err := log.Last(ctx, events.Root+".>")
	if err != nil {
		return err
	}
	return f.WaitFor(ctx, last)
}

// WaitFor blocks until every projection has applied stream sequence seq,
// for read-your-writes after an append. It fails at once with ErrStopped if
// a projection behind seq has stopped, and with ErrClosed after Close.
// While it waits, a batch holding seq commits without lingering.
func (r *Runner) WaitFor(ctx context.Context, seq uint64) error {
	var behind string
	var at uint64
	registered := false
	defer func() {
		if registered {
			r.mu.Lock()
			if r.waits[seq]--; r.waits[seq] <= 0 {
				delete(r.waits, seq)
			}
			r.mu.Unlock()
		}
	}()
	err := r.waitUntil(ctx, func() (bool, error) {
		behind = ""
		for _, w := range r.workers {
			if w.checkpoint >= seq {
				continue
			}
			behind, at = w.p.Name(), w.checkpoint
			switch {
			case w.err != nil:
				return false, fmt.Errorf("%w: %w", ErrStopped, w.err)
			case r.closed || !w.running:
				return false, ErrClosed
			}
		}
		if behind != "" && !registered {
			registered = true
			r.waits[seq]++
			close(r.waited)
			r.waited = make(chan struct{})
		}
		return behind == "", nil
	})
	if err != nil {
		return fmt.Errorf("wait for seq %d: %s at %d: %w", seq, behind, at, err)
	}
	return nil
}

// waitUntil calls done under r.mu whenever a worker's state changes, until
// it reports true or an error, or ctx ends.
func (r *Runner) waitUntil(ctx context.Context, done func() (bool, error)) error {
	for {
		r.mu.Lock()
		changed := r.changed
		ok, err := done()
		r.mu.Unlock()
		if ok || err != nil {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Commits returns how many transactions the Runner has committed since
// Open (a batch is one; a failing event's predecessors commit on their
// own), for benchmarks.
func (r *Runner) Commits() uint64 { return r.commits.Load() }

// Close stops the goroutines and waits for them (bounded by ctx). The
// consumers stay: the next Open resumes them.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.notifyLocked()
	r.mu.Unlock()
	r.cancel()
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close projections: %w", ctx.Err())
	}
}
