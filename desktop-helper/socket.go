package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/desktop-helper/wire"
)

// handler answers one request.
type handler interface {
	handle(wire.Request) wire.Answer
}

// server is the listening socket.
type server struct {
	path string
	ln   *net.UnixListener
	log  *slog.Logger
}

// readTimeout bounds how long a client may take to send its request line.
const readTimeout = 30 * time.Second

// listen makes <home>/desktop (mode 0700) when missing, refuses a folder
// another user could write, and listens on its sock.
func listen(home string, log *slog.Logger) (*server, error) {
	dir := filepath.Dir(wire.SocketPath(home))
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	if err := wire.SafeDir(dir); err != nil {
		return nil, fmt.Errorf("refusing to start: %w", err)
	}
	path := wire.SocketPath(home)
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("refusing to start: %s exists and is not a socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("another helper is already serving %s", path)
		}
		if err := os.Remove(path); err != nil { // a dead helper's socket
			return nil, err
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return &server{path: path, ln: ln, log: log}, nil
}

func (s *server) Close() error { return s.ln.Close() }

// serve answers connections until ctx ends, one goroutine per connection;
// it waits for them before it returns.
func (s *server) serve(ctx context.Context, h handler) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { s.ln.Close() })
	defer stop()
	defer s.ln.Close()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		wg.Go(func() { s.conn(c, h) })
	}
}

// conn answers one connection: one request line, one answer line.
func (s *server) conn(c *net.UnixConn, h handler) {
	defer c.Close()
	if err := wire.CheckPeer(c); err != nil {
		s.log.Warn("refused a peer", "err", err)
		s.write(c, wire.Answer{Code: wire.CodeNotAllowed, Error: err.Error()})
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(readTimeout))
	line, err := wire.ReadLine(bufio.NewReaderSize(c, 64<<10))
	if err != nil {
		s.write(c, wire.Answer{Code: wire.CodeBadRequest, Error: "read the request: " + err.Error()})
		return
	}
	var req wire.Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.write(c, wire.Answer{Code: wire.CodeBadRequest, Error: "the request is not valid JSON of the protocol: " + err.Error()})
		return
	}
	ans := h.handle(req)
	if ans.Error != "" {
		s.log.Info("refused", "op", req.Op, "code", ans.Code, "reason", ans.Error)
	}
	s.write(c, ans)
}

func (s *server) write(c *net.UnixConn, ans wire.Answer) {
	data, err := json.Marshal(ans)
	if err != nil {
		data, _ = json.Marshal(wire.Answer{Code: wire.CodeFailed, Error: err.Error()})
	}
	_ = c.SetWriteDeadline(time.Now().Add(readTimeout))
	if _, err := c.Write(append(data, '\n')); err != nil {
		s.log.Warn("write the answer", "err", err)
	}
}
