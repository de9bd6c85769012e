package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools/shell"
)

// Stdio is a server the crew starts as a command that speaks JSON-RPC over
// its standard input and output. It starts through the shell's sandbox
// (tools/shell): its own mount, PID and network namespaces, the crew home
// covered but for Dir and the Paths and ReadPaths under it, writable only
// Dir, Paths and a private temp dir, the network by the shell's policy
// only with Network, killed with the crew.
type Stdio struct {
	Command   []string // argv; [0] absolute or looked up in PATH
	Env       []string // "K=V" over the shell's filtered environment, ${VAR} already resolved
	Dir       string   // absolute working directory (created when missing)
	Home      string   // the crew home, hidden but for what is listed
	Paths     []string // absolute, read-write
	ReadPaths []string // absolute, read-only
	Network   bool
}

func (st *Stdio) String() string {
	if st == nil {
		return ""
	}
	return fmt.Sprint(st.Command, st.Env, st.Dir, st.Home, st.Paths, st.ReadPaths, st.Network)
}

// Restart pacing of a stdio server that ended: the first restart is at
// once, each next one waits twice as long, at most maxBackoff; a server
// that stayed up stableAfter counts from zero again.
const (
	firstBackoff = time.Second
	maxBackoff   = 30 * time.Second
	stableAfter  = time.Minute
	stderrCap    = 64 << 10 // bytes of one start's stderr kept in the log
)

// Restart is one restart of a stdio server (the pool's OnRestart).
type Restart struct {
	Server   string
	Restarts int    // since it last stayed up
	Reason   string // how the previous process ended, redacted
}

// proc is one running process of a stdio server.
type proc struct {
	cancel  context.CancelFunc
	done    chan struct{}
	started time.Time
	end     string    // how it ended, once done is closed
	endedAt time.Time // when, once done is closed
}

// backoff is the wait before the restart after n restarts.
func backoff(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	d := firstBackoff << (n - 1)
	if d > maxBackoff || d <= 0 {
		return maxBackoff
	}
	return d
}

// startLocked starts the server's process and returns the transport over
// its pipes; s.mu is held.
func (s *server) startLocked() (sdk.Transport, error) {
	st := s.cfg.Stdio
	now := s.pool.clock()
	reason := ""
	if p := s.proc; p != nil {
		select {
		case <-p.done:
		default:
			p.cancel() // a session that broke with its process still up
			<-p.done
		}
		reason = p.end
		if now.Sub(p.started) >= stableAfter {
			s.restarts = 0
		}
		if wait := backoff(s.restarts); now.Sub(p.endedAt) < wait {
			return nil, fmt.Errorf("it ended (%s) and is started again in %s", reason, (wait - now.Sub(p.endedAt)).Round(100*time.Millisecond))
		}
		s.restarts++
		s.total++
		s.lastEnd = reason
	}
	if err := os.MkdirAll(st.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &proc{cancel: cancel, done: make(chan struct{}), started: now}
	s.proc = p
	cmd := shell.Command{
		Exec: st.Command, Dir: st.Dir, Env: append(shell.Environ(os.Environ()), append([]string{"npm_config_cache=" + filepath.Join(st.Dir, ".npm")}, st.Env...)...),
		Stdin: inR, Stdout: outW, Stderr: &stderrLog{log: s.pool.logger.With("server", s.cfg.Name, "stream", "stderr"), secrets: s.pool.secrets},
		Lasting: true, View: st.view(),
		Sandbox: &shell.Policy{WritePaths: append([]string{st.Dir}, st.Paths...), Network: st.Network},
	}
	go func() {
		out, err := s.pool.box.Run(ctx, cmd)
		outW.Close() // the session reads EOF
		inR.Close()  // its writes fail
		p.end, p.endedAt = ended(s.pool.secrets, out, err), s.pool.clock()
		close(p.done)
		s.pool.logger.Info("MCP server process ended", "server", s.cfg.Name, "how", p.end)
	}()
	if reason != "" && s.pool.onRestart != nil {
		r := Restart{Server: s.cfg.Name, Restarts: s.restarts, Reason: reason}
		go s.pool.onRestart(r)
	}
	return &sdk.IOTransport{Reader: outR, Writer: inW}, nil
}

// stopProcLocked ends the running process, if any; s.mu is held.
func (s *server) stopProcLocked() {
	if s.proc != nil {
		s.proc.cancel()
	}
}

// procEndedLocked: the stdio server's process has ended; s.mu is held.
func (s *server) procEndedLocked() bool {
	if s.proc == nil {
		return false
	}
	select {
	case <-s.proc.done:
		return true
	default:
		return false
	}
}

// whyLocked adds how the process ended to a failed connect, when it
// ended within a moment; s.mu is held.
func (s *server) whyLocked(err error) error {
	if s.proc == nil {
		return err
	}
	select {
	case <-s.proc.done:
		return fmt.Errorf("the process ended (%s)", s.proc.end)
	case <-time.After(2 * time.Second):
		return err
	}
}

// view hides the crew home but for the server's folders in it.
func (st *Stdio) view() *shell.View {
	if st.Home == "" {
		return nil
	}
	v := &shell.View{Home: st.Home}
	in := func(p string) bool {
		rel, err := filepath.Rel(st.Home, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && rel != "."
	}
	for _, p := range append([]string{st.Dir}, st.Paths...) {
		if in(p) {
			v.Write = append(v.Write, p)
		}
	}
	for _, p := range st.ReadPaths {
		if in(p) {
			v.Read = append(v.Read, p)
		}
	}
	return v
}

// ended says how a process ended, redacted with r.
func ended(r *events.Redactor, out shell.Output, err error) string {
	var s string
	switch {
	case err != nil && !errors.Is(err, context.Canceled):
		s = "could not run: " + err.Error()
	case out.Signal != "":
		s = "ended by signal: " + out.Signal
	default:
		s = fmt.Sprintf("exit code %d", out.ExitCode)
	}
	if last := lastLine(out.Text); last != "" {
		s += ": " + last
	}
	return oneLine(errors.New(r.String(s)))
}

func lastLine(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// stderrLog writes a server's stderr to the log line by line, redacted,
// at most stderrCap bytes per process.
type stderrLog struct {
	log     *slog.Logger
	secrets *events.Redactor
	mu      sync.Mutex
	buf     []byte
	written int
	cut     bool
}

func (w *stderrLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) > 4096 {
				i = 4096
			} else {
				break
			}
		}
		line := w.buf[:i]
		w.buf = w.buf[min(i+1, len(w.buf)):]
		if w.written >= stderrCap {
			if !w.cut {
				w.cut = true
				w.log.Warn("MCP server stderr: the rest of this process's stderr is not logged", "cap_bytes", stderrCap)
			}
			continue
		}
		w.written += len(line)
		w.log.Info(w.secrets.String(strings.ToValidUTF8(string(line), "\uFFFD")))
	}
	return len(p), nil
}
