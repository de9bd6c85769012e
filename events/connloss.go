package events

import (
	"context"
	"errors"
	"sync"

	"github.com/nats-io/nats.go"
)

// connLoss is a context cancelled when its connection is lost, made anew
// after each loss: an acknowledgement or an answer awaited across a loss
// was lost with it, and is asked for again at once rather than waited
// for to a timeout (the connection reconnects on its own).
type connLoss struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
}

// errConnLost is the cause of an attempt cut by a connection's loss.
var errConnLost = errors.New("events: connection to the event store lost")

// watchLoss follows nc's losses, beside the disconnect handler it had.
func watchLoss(nc *nats.Conn) *connLoss {
	w := &connLoss{}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	prev := nc.Opts.DisconnectedErrCB
	nc.SetDisconnectErrHandler(func(c *nats.Conn, err error) {
		if prev != nil {
			prev(c, err)
		}
		w.mu.Lock()
		w.cancel()
		w.ctx, w.cancel = context.WithCancel(context.Background())
		w.mu.Unlock()
	})
	return w
}

// attempt is ctx, also cancelled (cause errConnLost) when the connection
// is lost from now on; stop releases it.
func (w *connLoss) attempt(ctx context.Context) (attempt context.Context, stop func()) {
	w.mu.Lock()
	lost := w.ctx
	w.mu.Unlock()
	attempt, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(lost, func() { cancel(errConnLost) })
	return attempt, func() { unhook(); cancel(nil) }
}

// cut says whether attempt ended because the connection was lost.
func cut(attempt context.Context) bool { return errors.Is(context.Cause(attempt), errConnLost) }
