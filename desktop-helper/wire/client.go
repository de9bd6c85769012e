package wire

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"syscall"
)

// ErrNotRunning: no helper listens on the socket.
var ErrNotRunning = errors.New("the desktop helper is not running")

// Call sends req to the helper whose socket is at path and returns its
// answer. It refuses a socket SafeSocket refuses and a helper of another
// uid before it writes anything.
func Call(ctx context.Context, path string, req Request) (Answer, error) {
	if err := SafeSocket(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Answer{}, fmt.Errorf("%w (no socket at %s)", ErrNotRunning, path)
		}
		return Answer{}, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) {
			return Answer{}, fmt.Errorf("%w (nothing listens on %s)", ErrNotRunning, path)
		}
		return Answer{}, err
	}
	defer c.Close()
	uc := c.(*net.UnixConn)
	if err := CheckPeer(uc); err != nil {
		return Answer{}, err
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	line, err := json.Marshal(req)
	if err != nil {
		return Answer{}, err
	}
	if _, err := c.Write(append(line, '\n')); err != nil {
		return Answer{}, fmt.Errorf("desktop helper: send: %w", err)
	}
	r := bufio.NewReaderSize(c, 64<<10)
	var ans Answer
	data, err := readLine(r)
	if err != nil {
		if ctx.Err() != nil {
			return Answer{}, ctx.Err()
		}
		return Answer{}, fmt.Errorf("desktop helper: answer: %w", err)
	}
	if err := json.Unmarshal(data, &ans); err != nil {
		return Answer{}, fmt.Errorf("desktop helper: answer: %w", err)
	}
	return ans, nil
}

// ReadLine reads one line of at most MaxLine bytes, without its newline.
func ReadLine(r *bufio.Reader) ([]byte, error) { return readLine(r) }

func readLine(r *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := r.ReadSlice('\n')
		out = append(out, chunk...)
		if len(out) > MaxLine {
			return nil, fmt.Errorf("line longer than %d bytes", MaxLine)
		}
		switch {
		case err == nil:
			return out[:len(out)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}
