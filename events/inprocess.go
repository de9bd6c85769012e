package events

import (
	"bytes"
	"net"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// inProcess gives nats.go its in-process connections to the embedded
// server with a receive buffer, as a socket has. The server's own
// in-process connection is a net.Pipe: a write waits until the client
// reads it. nats.go's flusher holds the connection's lock while it
// writes; its reader needs that lock for a PONG, an INFO or a flow
// control reply; the server's read loop, which the flusher waits for,
// writes its answers to the same client before it reads again. Under a
// burst the three waited on each other until the server's write
// deadline (10 s) cut the connection as a slow consumer — every
// acknowledgement, reply and delivery of the crew lost at once. With the
// buffer the server's writes land at once and the cycle cannot close.
type inProcess struct{ ns *server.Server }

func (p inProcess) InProcessConn() (net.Conn, error) {
	c, err := p.ns.InProcessConn()
	if err != nil {
		return nil, err
	}
	return newBufferedConn(c, inProcessBuffer), nil
}

// inProcessBuffer bounds what one connection holds read from the server
// and not yet taken by nats.go: past it the server's writes wait, and
// the server's own limits (pending bytes, write deadline) apply as to a
// socket whose buffer is full.
const inProcessBuffer = 8 << 20

// bufferedConn is a net.Conn whose reads come from a buffer a goroutine
// fills from the wrapped connection (up to limit bytes); writes, close
// and addresses are the wrapped connection's.
type bufferedConn struct {
	net.Conn
	limit int

	mu       sync.Mutex
	buf      bytes.Buffer
	err      error         // the wrapped connection's read error, after buf
	closed   bool          // Close was called: reads fail at once
	deadline time.Time     // of reads
	changed  chan struct{} // closed and made again when any of the above changes
}

func newBufferedConn(c net.Conn, limit int) *bufferedConn {
	b := &bufferedConn{Conn: c, limit: limit, changed: make(chan struct{})}
	go b.fill()
	return b
}

// notifyLocked wakes every reader and the filler waiting for a change.
func (b *bufferedConn) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// fill reads the wrapped connection into the buffer until it fails,
// waiting while the buffer is full.
func (b *bufferedConn) fill() {
	chunk := make([]byte, 64<<10)
	for {
		b.mu.Lock()
		for b.buf.Len() >= b.limit && !b.closed {
			ch := b.changed
			b.mu.Unlock()
			<-ch
			b.mu.Lock()
		}
		closed := b.closed
		b.mu.Unlock()
		if closed {
			return
		}
		n, err := b.Conn.Read(chunk)
		b.mu.Lock()
		b.buf.Write(chunk[:n])
		if err != nil {
			b.err = err
		}
		b.notifyLocked()
		b.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Read returns what the buffer holds, waiting for data, the wrapped
// connection's error or the read deadline.
func (b *bufferedConn) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		switch {
		case b.closed:
			return 0, net.ErrClosed
		case b.buf.Len() > 0:
			n, _ := b.buf.Read(p)
			if b.buf.Len() == 0 && b.buf.Cap() > 1<<20 {
				b.buf = bytes.Buffer{} // a burst's buffer is not kept
			}
			b.notifyLocked()
			return n, nil
		case b.err != nil:
			return 0, b.err
		case !b.deadline.IsZero() && !time.Now().Before(b.deadline):
			return 0, os.ErrDeadlineExceeded
		}
		ch, deadline := b.changed, b.deadline
		b.mu.Unlock()
		if deadline.IsZero() {
			<-ch
		} else {
			t := time.NewTimer(time.Until(deadline))
			select {
			case <-ch:
			case <-t.C:
			}
			t.Stop()
		}
		b.mu.Lock()
	}
}

func (b *bufferedConn) SetDeadline(t time.Time) error {
	b.SetReadDeadline(t)
	return b.Conn.SetWriteDeadline(t)
}

func (b *bufferedConn) SetReadDeadline(t time.Time) error {
	b.mu.Lock()
	b.deadline = t
	b.notifyLocked()
	b.mu.Unlock()
	return nil
}

func (b *bufferedConn) Close() error {
	b.mu.Lock()
	b.closed = true
	b.notifyLocked()
	b.mu.Unlock()
	return b.Conn.Close()
}
