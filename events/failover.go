package events

import (
	"context"
	"errors"
	"strconv"
	"strings"
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
//     conflict once its first try was stored: the refusal names the
//     scope's last sequence, and if the message there is this event (same
//     id in its header or its body), it was stored and that is the
//     answer. It is fetched by that sequence, not as "the last message
//     of the subject", which the embedded server answers by searching and
//     loading message blocks (a replicated stream's refusal names no
//     sequence: there it is the subject's last message).
func (l *Log) publish(ctx context.Context, subject, id string, body []byte, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	deadline := time.Now().Add(publishPatience)
	for {
		attempt, stop := l.loss.attempt(ctx)
		ack, err := l.js.Publish(attempt, subject, body, opts...)
		lost := err != nil && cut(attempt)
		stop()
		if lost && ctx.Err() == nil && time.Now().Before(deadline) {
			continue // the acknowledgement was lost with the connection: ask again
		}
		if err != nil && isWrongLastSequence(err) {
			var msg *jetstream.RawStreamMsg
			var gerr error
			if seq := lastSequenceOf(err); seq > 0 {
				msg, gerr = l.stream.GetMsg(ctx, seq)
			} else {
				// A replicated stream's refusal names no sequence.
				msg, gerr = l.stream.GetLastMsgForSubject(ctx, subject)
			}
			if gerr == nil && msg.Subject == subject && storedID(msg) == id {
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

// lastSequenceOf is the scope's last sequence a wrong-last-sequence
// refusal names ("wrong last sequence: 42"), 0 when it names none.
func lastSequenceOf(err error) uint64 {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return 0
	}
	_, n, ok := strings.Cut(apiErr.Description, "wrong last sequence: ")
	if !ok {
		return 0
	}
	seq, perr := strconv.ParseUint(strings.TrimSpace(n), 10, 64)
	if perr != nil {
		return 0
	}
	return seq
}
