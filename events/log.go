package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// StreamName is the one JetStream stream holding every event.
const StreamName = "CREW"

// Any appends without checking the scope's last sequence. Use it only for
// scopes that are not a single writer's (none of the conversation events).
const Any = ^uint64(0)

// Log appends and reads events on the CREW stream.
type Log struct {
	js     jetstream.JetStream
	stream jetstream.Stream
	// reads is the JetStream of the connection reads go on (SetReader):
	// js's unless another was given; loss and readLoss follow the two
	// connections' losses.
	reads          jetstream.JetStream
	loss, readLoss *connLoss
	// atomic: the stream takes atomic batches (batch.go); batches holds
	// this process's batches in flight.
	atomic  bool
	batches chan struct{}
	// node names this crew process's home among several sharing one
	// cluster (R-ES-8); empty with the embedded server.
	node string
	// redactor holds the home's secrets; every append is redacted with it.
	redactor *Redactor
	// raised is the raise of the stream's replicas Open recorded, if any.
	raised *StreamReplicasRaised
	// short is the replicas the stream was left at on a cluster of
	// servers that should hold 3 (0: not short).
	short, servers int
	// fsync makes appends durable on the embedded server with sync
	// "always" (Server.OpenLog, fsync.go); nil: the store's own setting.
	fsync *storeSync
	// embedded: the log's server is this process's own (Server.OpenLog).
	embedded bool
}

// Embedded reports whether the log's server is this process's own
// embedded server (Server.OpenLog): it starts and stops with the process,
// so what a consumer keeps on it needs to outlive the process no more
// than the server does.
func (l *Log) Embedded() bool { return l.embedded }

// SetReader sends the log's reads (direct gets, ordered consumers) on nc:
// the server answers a direct get inline in the asking connection's read
// loop, where a slow one would hold up every append behind it.
func (l *Log) SetReader(nc *nats.Conn) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("log reader: %w", err)
	}
	l.reads, l.readLoss = js, watchLoss(nc)
	return nil
}

// Redactor is the log's redactor: the secrets of the home it stores, which
// everything else that writes down or shows what an agent did (the live
// feed, Telegram, files written for an agent, the server's own log) uses
// too (R-X-6).
// A nil Log has none.
func (l *Log) Redactor() *Redactor {
	if l == nil {
		return nil
	}
	return l.redactor
}

// SetNode names the home this Log is opened for, when several crew
// processes share one NATS cluster: every durable consumer the process
// makes is then its own (Durable). Call it before any consumer is made.
func (l *Log) SetNode(node string) { l.node = node }

// Node is the name SetNode gave, empty for the embedded server.
func (l *Log) Node() string { return l.node }

// Durable is the name of this process's durable consumer called base:
// base itself on the embedded server, base_<node> on a shared cluster, so
// two crew processes neither split each other's messages nor delete each
// other's consumers.
func (l *Log) Durable(base string) string {
	if l.node == "" {
		return base
	}
	return base + "_" + l.node
}

// Open connects a Log to the CREW stream over nc, creating or updating the
// stream as needed. On a cluster the stream has 3 replicas (R-ES-8) when
// the cluster can place them, else 1. Every append is redacted with r, the
// home's secrets; nil starts a Redactor of its own that knows none yet.
// On the embedded server open it with Server.OpenLog instead, which makes
// each append durable as the server's sync mode says (ADR 0008).
func Open(ctx context.Context, nc *nats.Conn, r *Redactor) (*Log, error) {
	if r == nil {
		r = NewRedactor()
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	cfg := StreamConfig()
	// found is the stream's replica count before Open (0: none yet, or
	// unknown), lastRaise the last raise recorded then.
	var found int
	var lastRaise uint64
	if nc.ConnectedClusterName() != "" {
		cfg.Replicas = ClusterReplicas
		// One decision's events are one atomic batch there (batch.go).
		cfg.AllowAtomicPublish = true
		found, lastRaise = foundReplicas(ctx, js)
	}
	stream, err := createStream(ctx, js, cfg)
	// A cluster of enough servers that is still forming answers "cannot
	// replicate" until its peers are known: ask again for a while before
	// settling for one replica.
	for deadline := time.Now().Add(10 * time.Second); cfg.Replicas > 1 && cannotReplicate(err) &&
		ClusterSize(nc) >= ClusterReplicas && time.Now().Before(deadline) && ctx.Err() == nil; {
		time.Sleep(100 * time.Millisecond)
		stream, err = createStream(ctx, js, cfg)
	}
	if cfg.Replicas > 1 && cannotReplicate(err) {
		cfg.Replicas = 1
		stream, err = createStream(ctx, js, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("open log: stream %s: %w", StreamName, err)
	}
	// Batches only on a replicated stream, whose server stages a batch in
	// memory: a single-replica file stream stages each batch in a file
	// store of its own, created and fsynced per batch, which costs more
	// than the fsyncs it saves (ADR 0005). A server before 2.12 ignores
	// AllowAtomicPublish: appends then go one message at a time too.
	info := stream.CachedInfo().Config
	atomic := info.AllowAtomicPublish && info.Replicas > 1
	loss := watchLoss(nc)
	l := &Log{js: js, reads: js, loss: loss, readLoss: loss, stream: stream, atomic: atomic, batches: make(chan struct{}, batchSlots), redactor: r}
	if nc.ConnectedClusterName() != "" && ClusterSize(nc) >= ClusterReplicas && info.Replicas < ClusterReplicas {
		l.short, l.servers = info.Replicas, ClusterSize(nc)
	}
	if found > 0 && info.Replicas > found {
		// Recorded once: a process that raised it at the same moment
		// finds the record made (a conflict) and records nothing.
		raise := &StreamReplicasRaised{From: found, To: info.Replicas, Servers: ClusterSize(nc)}
		_, err := l.Append(ctx, ClusterScope, lastRaise, MustNew(raise))
		switch {
		case err == nil:
			l.raised = raise
		case !errors.Is(err, ErrConflict):
			return nil, fmt.Errorf("open log: record the stream's replicas raised from %d to %d: %w", found, info.Replicas, err)
		}
	}
	return l, nil
}

// foundReplicas is the CREW stream's replica count as found on the
// cluster (0 when it does not exist yet or does not answer in time) and
// the sequence of the last raise recorded.
func foundReplicas(ctx context.Context, js jetstream.JetStream) (replicas int, lastRaise uint64) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, StreamName)
	if err != nil {
		return 0, 0
	}
	if msg, err := s.GetLastMsgForSubject(ctx, ClusterScope.Filter()); err == nil {
		lastRaise = msg.Sequence
	} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, 0
	}
	return s.CachedInfo().Config.Replicas, lastRaise
}

// Raised is the raise of the stream's replicas this Open made and
// recorded, nil when it made none (R-ES-8).
func (l *Log) Raised() *StreamReplicasRaised { return l.raised }

// Short is the replica count Open had to leave the stream at although
// the cluster has servers enough for 3 (some down, or short of room),
// and how many; 0 when it is not short. The next Open tries again.
func (l *Log) Short() (replicas, servers int) { return l.short, l.servers }

// ClusterReplicas is the CREW stream's replica count on a cluster of at
// least as many servers.
const ClusterReplicas = 3

// createStream creates or updates the stream, each try bounded by a
// second: a cluster that has just started has no JetStream leader yet, and
// a request sent then waits for its whole timeout.
func createStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		tryCtx, cancel := context.WithTimeout(ctx, time.Second)
		stream, err := js.CreateOrUpdateStream(tryCtx, cfg)
		cancel()
		var apiErr *jetstream.APIError
		answered := errors.As(err, &apiErr) && apiErr.ErrorCode != jsClusterNotAvailable
		if err == nil || answered || ctx.Err() != nil || time.Now().After(deadline) {
			return stream, err
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return nil, err
		}
	}
}

// jsClusterNotAvailable is "JetStream system temporarily unavailable": no
// leader yet.
const jsClusterNotAvailable = 10008

// cannotReplicate pins the server's answers to a replica count it cannot
// place: no cluster (10074), too few servers (10005, 10023).
func cannotReplicate(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode {
	case 10074, 10005, 10023:
		return true
	}
	return false
}

// DuplicateWindow is how long the server remembers the id of an
// unchecked append, so a retry of a stored one is answered with its
// sequence and stores nothing.
const DuplicateWindow = 30 * time.Second

// StreamConfig is the configuration of the CREW stream.
func StreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamName,
		Description: "my-agent-crew event log",
		Subjects:    []string{Root + ".>"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardNew,
		// The window only unchecked appends use (appendEach); it covers
		// publish's patience with room to spare. The server rebuilds it
		// at each start by reading every message stored within it.
		Duplicates: DuplicateWindow,
		// The log is the audit trail: single events are never deleted.
		DenyDelete:  true,
		AllowDirect: true,
	}
}

// JetStream exposes the underlying context for consumers (projections).
func (l *Log) JetStream() jetstream.JetStream { return l.js }

// Stream exposes the CREW stream handle.
func (l *Log) Stream() jetstream.Stream { return l.stream }

// Append stores envs, in order, on scope. expect is the stream sequence of the
// last event stored on the scope (0 for a new scope, Any to skip the check).
// On success the returned envelopes carry their subject and sequence; the
// last one's Seq is what the writer expects next time.
//
// Each event is its own JetStream message. On a replicated stream (a
// cluster) several events are stored as one atomic batch, all or none
// (batch.go); on the embedded server's stream, one at a time, so a failure
// part-way leaves the events before it stored (and returned with the
// error).
//
// Every payload is redacted first (the log's Redactor, R-X-6): a known secret value
// never reaches the log. The returned envelopes carry the stored,
// redacted data, so state built from them is what a replay builds.
//
// With sync "always" on the embedded server (a Log from Server.OpenLog)
// Append returns once its events are fsynced, with one fsync for all of
// them (and for every append deferred before it, see Deferred).
//
// A refusal for room is an ErrStoreFull, no answer in time (after asking
// again for a while) an ErrStoreUnavailable (StoreError).
func (l *Log) Append(ctx context.Context, scope Scope, expect uint64, envs ...Envelope) ([]Envelope, error) {
	var out []Envelope
	var err error
	if l.atomic && len(envs) > 1 && len(envs) <= maxAtomicBatch {
		out, err = l.appendAtomic(ctx, scope, expect, envs)
	} else {
		out, err = l.appendEach(ctx, scope, expect, envs)
	}
	if err == nil && l.fsync != nil && !IsDeferred(ctx) {
		// One fsync for the decision, and for what was deferred before it.
		err = l.fsync.Sync()
	}
	return out, storeError(ctx, err)
}

// appendEach is Append one message at a time.
func (l *Log) appendEach(ctx context.Context, scope Scope, expect uint64, envs []Envelope) ([]Envelope, error) {
	out := make([]Envelope, 0, len(envs))
	for _, env := range envs {
		if env.ID == "" || env.Type == "" || env.V == 0 {
			return out, fmt.Errorf("append %s: envelope without id, type or version", scope)
		}
		subject := scope.Subject(env.Type)
		env.Data = l.redactor.JSON(env.Data)
		body, err := encodeBody(env)
		if err != nil {
			return out, fmt.Errorf("append %s: %w", subject, err)
		}
		if max := l.js.Conn().MaxPayload() - appendHeadroom; max > 0 && int64(len(body)) > max {
			return out, fmt.Errorf("append %s: %w: %d bytes encoded, the log takes at most %d", subject, ErrTooLarge, len(body), max)
		}
		// A checked append is made safe to retry by its expectation: a
		// retry of a stored one is refused as a conflict and recognised by
		// its id (publish). Only an unchecked append asks the server's
		// duplicate window: every message id the server holds there is
		// rebuilt into memory at each start (docs/performance.md), so
		// checked appends, nearly all of them, carry none.
		var opts []jetstream.PublishOpt
		var check expectation
		if expect != Any {
			check = expectation{filter: scope.Filter(), last: expect}
			opts = append(opts, jetstream.WithExpectLastSequenceForSubject(expect, scope.Filter()))
		} else {
			opts = append(opts, jetstream.WithMsgID(env.ID))
		}
		ack, err := l.publish(ctx, subject, env.ID, body, check, opts...)
		if err != nil {
			if isWrongLastSequence(err) {
				return out, &ConflictError{Subject: subject, Expected: expect, Err: err}
			}
			return out, fmt.Errorf("append %s: %w", subject, err)
		}
		env.Subject, env.Seq = subject, ack.Sequence
		out = append(out, env)
		if expect != Any {
			expect = ack.Sequence
		}
	}
	return out, nil
}

// appendHeadroom is kept of the max payload for the message's headers
// (its id, the expected sequence).
const appendHeadroom = 1 << 10

// isWrongLastSequence pins the server's answers to a failed expectation
// (10071 single replica, 10164 replicated); a test checks them against the
// server we embed.
func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// encodeBody is the stored form: the envelope without subject and sequence.
func encodeBody(env Envelope) ([]byte, error) {
	return marshalEnvelope(env)
}

// Last returns the stream sequence of the last event matching filter, or 0
// when there is none.
//
// A stream without a leader (just created on a cluster, or between two
// leaders) is asked again for as long as an append would wait for one
// (publishPatience), so a crew process started with its cluster does not
// stop on the first "no responders".
func (l *Log) Last(ctx context.Context, filter string) (uint64, error) {
	deadline := time.Now().Add(publishPatience)
	for {
		msg, err := l.stream.GetLastMsgForSubject(ctx, filter)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			return 0, nil
		case err == nil:
			return msg.Sequence, nil
		case noLeader(err) && ctx.Err() == nil && time.Now().Before(deadline):
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		return 0, fmt.Errorf("last sequence of %s: %w", filter, err)
	}
}

// Read yields the events matching filter with stream sequence ≥ from, in
// stream order, until none is left (events stored while it reads may be
// yielded too). A decode failure is yielded as a *DecodeError and ends the
// sequence.
//
// It starts with JetStream's batched direct get, which creates no
// consumer, so a thousand turns can load at once without touching the
// server's consumer limits; each batch says how many matching events are
// left, and when more than directSpan are (a cold replay) the rest comes
// through an ordered consumer, which streams faster. It never asks for
// the filter's last message first: the embedded server answers that by
// loading the message block that holds it (up to 8 MB from disk), in the
// reader's connection, ahead of every publish behind it.
func (l *Log) Read(ctx context.Context, filter string, from uint64) iter.Seq2[Envelope, error] {
	return func(yield func(Envelope, error) bool) {
		seq := max(from, 1)
		// The first batch is one event: its end says how many are left,
		// and each later batch asks for no more than that. A batch asked
		// for more than is left makes the server look for the next match
		// to the end of the stream (a scan of every message after the
		// filter's last, in the reader's connection).
		// The read ends where the log was at the first answer: what it
		// said was left then is all the later batches ask for, so an event
		// stored during the read is the next read's.
		batch := uint64(1)
		first, remaining := true, uint64(0)
		var n uint64 // events yielded by the batch in hand
		counted := func(env Envelope, err error) bool { n++; return yield(env, err) }
		for {
			n = 0
			next, left, done, err := l.directBatch(ctx, filter, seq, batch, counted)
			if errors.Is(err, errReconnected) {
				// The answer was lost with the connection: ask again for
				// the rest of what this batch was for.
				if !first {
					remaining -= min(remaining, n)
					if remaining == 0 {
						return
					}
				}
				seq, batch = next, min(max(remaining, 1), readBatch)
				continue
			}
			if err != nil {
				yield(Envelope{}, fmt.Errorf("read %s from %d: %w", filter, seq, err))
				return
			}
			if first {
				first, remaining = false, left
			} else {
				remaining -= min(remaining, n)
			}
			if done || remaining == 0 {
				return
			}
			if remaining > directSpan {
				l.readOrdered(ctx, filter, next, yield)
				return
			}
			seq, batch = next, min(remaining, readBatch)
		}
	}
}

// readBatch is how many events one direct-get request returns; past
// directSpan events left, Read streams the rest with an ordered consumer.
const (
	readBatch  = 512
	directSpan = 4096
)

// readOrdered streams the span with an ordered consumer, up to the last
// event stored when it started.
func (l *Log) readOrdered(ctx context.Context, filter string, from uint64, yield func(Envelope, error) bool) {
	l.consume(ctx, "read", filter, from, false, yield)
}

// consume delivers filter's events from from on through an ordered
// consumer; follow keeps going past the current end.
func (l *Log) consume(ctx context.Context, what, filter string, from uint64, follow bool, yield func(Envelope, error) bool) {
	l.consumeAll(ctx, what, []string{filter}, from, follow, yield)
}

// FollowAll is Follow over several subject filters at once, in stream
// order (the team runtime follows its boards, mailboxes and runs).
func (l *Log) FollowAll(ctx context.Context, filters []string, from uint64) iter.Seq2[Envelope, error] {
	return func(yield func(Envelope, error) bool) {
		l.consumeAll(ctx, "follow", filters, from, true, yield)
	}
}

func (l *Log) consumeAll(ctx context.Context, what string, filters []string, from uint64, follow bool, yield func(Envelope, error) bool) {
	filter := strings.Join(filters, " ")
	// A reader that dies leaves its consumer to the server, which removes it
	// after a short idle time.
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: filters, InactiveThreshold: 10 * time.Second}
	if from > 1 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = from
	}
	cons, err := l.reads.OrderedConsumer(ctx, StreamName, cfg)
	if err != nil {
		yield(Envelope{}, fmt.Errorf("%s %s from %d: %w", what, filter, from, err))
		return
	}
	if !follow && cons.CachedInfo().NumPending == 0 {
		return
	}
	msgs, err := cons.Messages(jetstream.PullMaxMessages(1024))
	if err != nil {
		yield(Envelope{}, fmt.Errorf("%s %s from %d: %w", what, filter, from, err))
		return
	}
	defer msgs.Stop()
	stop := context.AfterFunc(ctx, msgs.Stop)
	defer stop()
	for {
		msg, err := msgs.Next()
		if err != nil {
			if follow && ctx.Err() != nil {
				return // the follower left
			}
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			yield(Envelope{}, fmt.Errorf("%s %s from %d: %w", what, filter, from, err))
			return
		}
		meta, err := msg.Metadata()
		if err != nil {
			yield(Envelope{}, fmt.Errorf("%s %s: metadata: %w", what, filter, err))
			return
		}
		env, err := decode(msg.Subject(), meta.Sequence.Stream, msg.Data())
		if !yield(env, err) || err != nil {
			return
		}
		if !follow && meta.NumPending == 0 {
			return
		}
	}
}

// directBatch fetches up to batch events matching filter from seq on,
// yielding each. It returns where to continue, how many matching events
// were left after the batch, and done when nothing is (more) in range or
// the caller stopped.
func (l *Log) directBatch(ctx context.Context, filter string, seq, batch uint64, yield func(Envelope, error) bool) (next, left uint64, done bool, err error) {
	nc := l.reads.Conn()
	req, _ := json.Marshal(map[string]any{"seq": seq, "next_by_subj": filter, "batch": batch})
	inbox := nc.NewRespInbox()
	// Room for the batch and its end, so never full: a synchronous
	// subscription's channel is nats.go's 65,536 slots (512 KB), which
	// thousands of conversations loading at once held at the peak of a
	// burst (most of its RSS, in the heap profile).
	answers := make(chan *nats.Msg, batch+1)
	sub, err := nc.ChanSubscribe(inbox, answers)
	if err != nil {
		return 0, 0, false, err
	}
	defer sub.Unsubscribe()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// A connection lost meanwhile lost the request or its answer, which
	// is asked again (errReconnected) rather than waited for to the end.
	wait, stop := l.readLoss.attempt(ctx)
	defer stop()
	if err := nc.PublishRequest("$JS.API.DIRECT.GET."+StreamName, inbox, req); err != nil {
		return 0, 0, false, err
	}
	last := seq - 1
	for {
		var msg *nats.Msg
		select {
		case msg = <-answers:
		case <-wait.Done():
			if cut(wait) && ctx.Err() == nil {
				return last + 1, 0, false, errReconnected
			}
			return 0, 0, false, ctx.Err()
		}
		switch msg.Header.Get("Status") {
		case "404": // nothing (more) in range
			return 0, 0, true, nil
		case "204": // end of batch
			pending, _ := strconv.ParseUint(msg.Header.Get("Nats-Num-Pending"), 10, 64)
			return last + 1, pending, false, nil
		case "":
		default:
			return 0, 0, false, fmt.Errorf("direct get: %s %s", msg.Header.Get("Status"), msg.Header.Get("Description"))
		}
		n, err := strconv.ParseUint(msg.Header.Get("Nats-Sequence"), 10, 64)
		if err != nil {
			return 0, 0, false, fmt.Errorf("direct get: bad sequence header %q", msg.Header.Get("Nats-Sequence"))
		}
		last = n
		env, derr := decode(msg.Header.Get("Nats-Subject"), n, msg.Data)
		if !yield(env, derr) || derr != nil {
			// The caller stopped (or saw the error): drain nothing more.
			return 0, 0, true, nil
		}
	}
}

// errReconnected: the connection of a direct get was lost and made again
// while its answer was awaited.
var errReconnected = errors.New("events: connection lost and made again during a read")

// ReadAll collects Read into a slice.
func (l *Log) ReadAll(ctx context.Context, filter string, from uint64) ([]Envelope, error) {
	var out []Envelope
	for env, err := range l.Read(ctx, filter, from) {
		if err != nil {
			return out, err
		}
		out = append(out, env)
	}
	return out, nil
}

// Follow yields the events matching filter from sequence from on, and keeps
// yielding new ones as they are stored, until ctx ends or the caller stops.
// Used by live feeds (SSE); stream sequences make resumption exact.
func (l *Log) Follow(ctx context.Context, filter string, from uint64) iter.Seq2[Envelope, error] {
	return func(yield func(Envelope, error) bool) {
		l.consume(ctx, "follow", filter, from, true, yield)
	}
}

// LiveSubject carries a conversation's display-only deltas (model text and
// tool-call arguments as they are written). Core NATS, not stored: lossy by
// design; the stored events are the truth.
func LiveSubject(conversation string) string { return "live.conv." + conversation }

// LiveFeed subscribes an SSE client to a conversation's deltas on
// LiveSubject; the func it returns unsubscribes.
func LiveFeed(nc *nats.Conn) func(conv string, deliver func([]byte)) (func(), error) {
	return func(conv string, deliver func([]byte)) (func(), error) {
		sub, err := nc.Subscribe(LiveSubject(conv), func(m *nats.Msg) { deliver(m.Data) })
		if err != nil {
			return nil, err
		}
		return func() { sub.Unsubscribe() }, nil
	}
}
