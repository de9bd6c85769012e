package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// On a replicated stream (a cluster, nats.url), one decision's events,
// when there are several, are stored as one JetStream atomic batch
// (nats-server 2.12+, AllowAtomicPublish): all or none, one replicated
// proposal, the scope's expected last sequence checked once on the first
// message. The embedded single-replica stream does not take batches: its
// server stages each one in a file store of its own (ADR 0005). Each event
// stays its own message, so histories written either way read the same.

// maxAtomicBatch is the most events one batch carries (the server's
// default limit is 1000); a longer append goes one message at a time.
const maxAtomicBatch = 1000

// batchSlots bounds this process's batches in flight at once: the server
// allows 50 per stream (JSAtomicPublishTooManyInflight), and a batch holds
// its slot only from its first message to its commit.
const batchSlots = 16

// Error codes of atomic batches (TestAtomicBatchWhatTheServerAllows).
const (
	jsBatchDuplicate       = 10201 // a message id of the batch was stored before
	jsBatchTooManyInflight = 10210
)

// batchAck is the answer to a batch's commit.
type batchAck struct {
	Stream string              `json:"stream"`
	Seq    uint64              `json:"seq"`
	Batch  string              `json:"batch"`
	Count  int                 `json:"count"`
	Error  *jetstream.APIError `json:"error,omitempty"`
}

// appendAtomic is Append of two or more events as one batch.
func (l *Log) appendAtomic(ctx context.Context, scope Scope, expect uint64, envs []Envelope) ([]Envelope, error) {
	batch := make([]Envelope, len(envs))
	bodies := make([][]byte, len(envs))
	for i, env := range envs {
		if env.ID == "" || env.Type == "" || env.V == 0 {
			return nil, fmt.Errorf("append %s: envelope without id, type or version", scope)
		}
		env.Subject = scope.Subject(env.Type)
		env.Data = l.redactor.JSON(env.Data)
		body, err := encodeBody(env)
		if err != nil {
			return nil, fmt.Errorf("append %s: %w", env.Subject, err)
		}
		batch[i], bodies[i] = env, body
	}
	return l.appendBatch(ctx, scope, expect, envs, batch, bodies)
}

// appendBatch stores bodies (envs encoded) on their subjects as one
// atomic batch. expect (unless Any) is checked on the first message. A
// batch answered "contains a duplicate" is a retry of orig (the envelopes
// as given to Append; fresh ids are never reused otherwise).
func (l *Log) appendBatch(ctx context.Context, scope Scope, expect uint64, orig, envs []Envelope, bodies [][]byte) ([]Envelope, error) {
	select {
	case l.batches <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("append %s: %w", scope, ctx.Err())
	}
	defer func() { <-l.batches }()
	var ack batchAck
	patience := time.Now().Add(publishPatience)
	for try := 0; ; try++ {
		var err error
		if ack, err = l.publishBatch(ctx, scope, expect, envs, bodies); err != nil {
			// No stream leader answered (one is being elected, R-ES-8):
			// ask again; a batch stored meanwhile answers as a duplicate.
			if noLeader(err) && ctx.Err() == nil && time.Now().Before(patience) {
				select {
				case <-time.After(250 * time.Millisecond):
					continue
				case <-ctx.Done():
				}
			}
			return nil, fmt.Errorf("append %s: %w", scope, err)
		}
		// Another process's batches can fill the server's slots; nothing
		// was stored: try again shortly.
		if ack.Error == nil || ack.Error.ErrorCode != jsBatchTooManyInflight || try == 20 {
			break
		}
		select {
		case <-time.After(time.Duration(try+1) * 5 * time.Millisecond):
		case <-ctx.Done():
			return nil, fmt.Errorf("append %s: %w", scope, ctx.Err())
		}
	}
	if e := ack.Error; e != nil {
		switch {
		case isWrongLastSequence(e):
			return nil, &ConflictError{Subject: envs[0].Subject, Expected: expect, Err: e}
		case e.ErrorCode == jsBatchDuplicate:
			// A retry: the batch was stored before (whole, or in part by
			// a build appending one message at a time). One message at a
			// time, each stored one is answered with its sequence and the
			// rest is stored once, as for any retried append.
			return l.appendEach(ctx, scope, expect, orig)
		}
		return nil, fmt.Errorf("append %s: atomic batch of %d: %w", scope, len(envs), e)
	}
	if ack.Count != len(envs) || ack.Seq < uint64(len(envs)) {
		return nil, fmt.Errorf("append %s: atomic batch of %d answered %d stored up to seq %d", scope, len(envs), ack.Count, ack.Seq)
	}
	// A batch is stored contiguously: its last message has the ack's
	// sequence.
	out := make([]Envelope, len(envs))
	for i, env := range envs {
		env.Seq = ack.Seq - uint64(len(envs)-1-i)
		out[i] = env
	}
	return out, nil
}

// publishBatch sends the batch and returns the commit's answer.
func (l *Log) publishBatch(ctx context.Context, scope Scope, expect uint64, envs []Envelope, bodies [][]byte) (batchAck, error) {
	nc := l.js.Conn()
	id := nuid.Next()
	for i, env := range envs {
		m := nats.NewMsg(env.Subject)
		m.Data = bodies[i]
		m.Header.Set(jetstream.MsgIDHeader, env.ID)
		m.Header.Set("Nats-Batch-Id", id)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if i == 0 && expect != Any {
			m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(expect, 10))
			m.Header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, scope.Filter())
		}
		if i < len(envs)-1 {
			if err := nc.PublishMsg(m); err != nil {
				return batchAck{}, err
			}
			continue
		}
		m.Header.Set("Nats-Batch-Commit", "1")
		reqCtx := ctx
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			reqCtx, cancel = context.WithTimeout(ctx, 5*time.Second) // the jetstream client's default
			defer cancel()
		}
		reply, err := nc.RequestMsgWithContext(reqCtx, m)
		if err != nil {
			return batchAck{}, err
		}
		var ack batchAck
		if err := json.Unmarshal(reply.Data, &ack); err != nil {
			return batchAck{}, fmt.Errorf("atomic batch ack %q: %w", reply.Data, err)
		}
		return ack, nil
	}
	return batchAck{}, errors.New("empty batch")
}
