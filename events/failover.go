package events

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// publish publishes one event, asking again while the stream has no
// leader to answer (a cluster electing a new one after a server died
// takes a few hundred milliseconds, R-ES-8). A try that was stored but
// not acknowledged is answered with its sequence, never stored twice:
//
//   - an unchecked append carries its id as Nats-Msg-Id, and the server
//     answers a retry within DuplicateWindow as a duplicate;
//   - a checked append (an expected last sequence) is refused as a
//     conflict once its first try was stored: if the scope's first
//     message after the expected sequence is this event (same id in its
//     body), it was stored and that is the answer (storedAfter), even
//     when the pass it started has stored more behind it since.
func (l *Log) publish(ctx context.Context, subject, id string, body []byte, check expectation, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	deadline := time.Now().Add(publishPatience)
	for {
		attempt, stop := l.loss.attempt(ctx)
		ack, err := l.js.Publish(attempt, subject, body, opts...)
		lost := err != nil && cut(attempt)
		stop()
		if lost && ctx.Err() == nil && time.Now().Before(deadline) {
			continue // the acknowledgement was lost with the connection: ask again
		}
		if err != nil && isWrongLastSequence(err) && check.filter != "" {
			if ack, ok := l.storedAfter(ctx, subject, id, check); ok {
				return ack, nil
			}
		}
		if err == nil || !noLeader(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return ack, err
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return nil, err
		}
	}
}

// expectation is a checked append's scope filter and the last sequence it
// expected there; the zero value is an unchecked append.
type expectation struct {
	filter string
	last   uint64
}

// storedAfter says whether the event id was stored as the scope's first
// message after the sequence its append expected: a checked append is
// stored only while that sequence is the scope's last, so once stored it
// is the message right after it, whatever was stored behind it since (a
// pass the message itself started, before its acknowledgement came). It
// reads that one message by sequence and subject, never "the last message
// of the subject", which the embedded server answers by searching and
// loading message blocks.
func (l *Log) storedAfter(ctx context.Context, subject, id string, check expectation) (*jetstream.PubAck, bool) {
	msg, err := l.stream.GetMsg(ctx, check.last+1, jetstream.WithGetMsgSubject(check.filter))
	if err != nil || msg.Subject != subject || storedID(msg) != id {
		return nil, false
	}
	return &jetstream.PubAck{Stream: StreamName, Sequence: msg.Sequence, Duplicate: true}, true
}

// publishPatience bounds how long publish waits for a stream leader.
const publishPatience = 15 * time.Second

// noLeader: nobody answered for the stream (no responders, a timeout).
func noLeader(err error) bool {
	return errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
}

// storedID is the event id of a stored message: its Nats-Msg-Id, or the
// id in its body for a checked append (which carries no header).
func storedID(msg *jetstream.RawStreamMsg) string {
	if id := msg.Header.Get(jetstream.MsgIDHeader); id != "" {
		return id
	}
	env, err := decode(msg.Subject, msg.Sequence, msg.Data)
	if err != nil {
		return ""
	}
	return env.ID
}
