package loop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/tools"
	"github.com/my-agent-crew/crew/tools/shell"
)

// Caps of a task notification's output: its head and its tail (R-TEAM §8).
const (
	TaskOutputHead = 4 << 10
	TaskOutputTail = 4 << 10
)

// Background runs shell_run's background commands for the server: each in
// its own process group and namespaces through shell.Run (so tracked, and
// killed at the next start after a crash), its end appended to the
// conversation as a task_notification, which the worker turns into the
// next round. Close kills what still runs.
type Background struct {
	convs  *Convs
	newID  func() string
	logger *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// NewBackground returns the runner; newID names tasks.
func NewBackground(convs *Convs, newID func() string, logger *slog.Logger) *Background {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Background{convs: convs, newID: newID, logger: logger, ctx: ctx, cancel: cancel}
}

// Start runs c in the background for the call env describes.
func (b *Background) Start(env tools.Env, c shell.Command) (string, error) {
	if env.Conversation == "" {
		return "", errors.New("no conversation to report to")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return "", errors.New("the server is stopping")
	}
	id := "bg-" + b.newID()
	b.wg.Go(func() { b.run(env, id, c) })
	return id, nil
}

func (b *Background) run(env tools.Env, id string, c shell.Command) {
	out, err := shell.Run(b.ctx, c)
	n := &events.TaskNotification{TaskID: id, CallID: env.CallID, FromRun: env.RunID, Command: c.Script,
		ExitCode: out.ExitCode, Signal: out.Signal, TimedOut: out.TimedOut}
	n.Output, n.Dropped = headTail(out.Text, TaskOutputHead, TaskOutputTail)
	n.Dropped += out.Dropped
	switch {
	case err != nil && b.ctx.Err() != nil:
		n.Failure, n.ExitCode = "killed: the server stopped", -1
	case err != nil:
		n.Failure, n.ExitCode = err.Error(), -1
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(b.ctx), 10*time.Second)
	defer cancel()
	if err := b.report(ctx, env.Conversation, n); err != nil {
		b.logger.Error("background command's end not recorded", "conversation", env.Conversation, "task", id, "err", err)
	}
}

// report appends n to the conversation; the worker's trigger consumer
// starts the round it opens.
func (b *Background) report(ctx context.Context, conv string, n *events.TaskNotification) error {
	cv, err := b.convs.Get(ctx, conv)
	if err != nil {
		return err
	}
	_, err = cv.Append(ctx, func(st *State) ([]events.Event, error) {
		if st.Closed {
			return nil, fmt.Errorf("conversation %s is closed", conv)
		}
		return []events.Event{n}, nil
	})
	return err
}

// Close kills the commands still running (their whole process groups and
// PID namespaces) and waits until each has reported its end.
func (b *Background) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}

// headTail keeps at most head bytes of s's start and tail of its end, and
// says how many bytes it cut.
func headTail(s string, head, tail int) (string, int64) {
	if len(s) <= head+tail {
		return s, 0
	}
	cut := len(s) - head - tail
	text := s[:head] + "\n[… " + strconv.Itoa(cut) + " bytes of output dropped …]\n" + s[len(s)-tail:]
	return strings.ToValidUTF8(text, "\uFFFD"), int64(cut)
}
