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
// takes a few hundred milliseconds, R-ES-8). Every event carries its id
// as Nats-Msg-Id, so a try that was stored but not acknowledged is
// answered as a duplicate with its sequence, never stored twice.
//
// The expected-sequence check comes before the server's duplicate check,
// so a try after a stored one is refused as a conflict: publish then
// looks at the subject's last message, and if it is this event (same id),
// it was stored and that is the answer.
func (l *Log) publish(ctx context.Context, subject, id string, body []byte, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	deadline := time.Now().Add(publishPatience)
	for {
		ack, err := l.js.Publish(ctx, subject, body, opts...)
		if err != nil && isWrongLastSequence(err) {
			if msg, gerr := l.stream.GetLastMsgForSubject(ctx, subject); gerr == nil && msg.Header.Get(jetstream.MsgIDHeader) == id {
				return &jetstream.PubAck{Stream: StreamName, Sequence: msg.Sequence, Duplicate: true}, nil
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

// publishPatience bounds how long publish waits for a stream leader.
const publishPatience = 15 * time.Second

// noLeader: nobody answered for the stream (no responders, a timeout).
func noLeader(err error) bool {
	return errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
}
