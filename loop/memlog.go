package loop

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/my-agent-crew/crew/events"
)

// MemLog is an in-memory Appender with the log's semantics (per-scope
// expected sequence, stream order). Replay runs the loop on it, so a replay
// can never touch the real log.
type MemLog struct {
	mu     sync.Mutex
	envs   []events.Envelope
	seq    uint64
	before func(env events.Envelope) error // called for each append; an error refuses it
}

var _ Appender = (*MemLog)(nil)

// NewMemLog holds envs (with their sequences) as already stored.
func NewMemLog(envs []events.Envelope) *MemLog {
	m := &MemLog{}
	for _, e := range envs {
		m.envs = append(m.envs, e)
		m.seq = max(m.seq, e.Seq)
	}
	return m
}

// Append implements Appender.
func (m *MemLog) Append(ctx context.Context, scope events.Scope, expect uint64, envs ...events.Envelope) ([]events.Envelope, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []events.Envelope
	for _, env := range envs {
		if expect != events.Any && expect != m.lastLocked(scope.Filter()) {
			return out, &events.ConflictError{Subject: scope.Subject(env.Type), Expected: expect, Err: fmt.Errorf("memlog")}
		}
		m.seq++
		env.Subject, env.Seq = scope.Subject(env.Type), m.seq
		if m.before != nil {
			if err := m.before(env); err != nil {
				m.seq--
				return out, err
			}
		}
		m.envs = append(m.envs, env)
		out = append(out, env)
		if expect != events.Any {
			expect = env.Seq
		}
	}
	return out, nil
}

// appendRaw stores an already made event (a recorded external input).
func (m *MemLog) appendRaw(scope events.Scope, env events.Envelope) events.Envelope {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	env.Subject, env.Seq = scope.Subject(env.Type), m.seq
	m.envs = append(m.envs, env)
	return env
}

// Last implements Reader.
func (m *MemLog) Last(ctx context.Context, filter string) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastLocked(filter), nil
}

func (m *MemLog) lastLocked(filter string) uint64 {
	for i := len(m.envs) - 1; i >= 0; i-- {
		if matches(filter, m.envs[i].Subject) {
			return m.envs[i].Seq
		}
	}
	return 0
}

// Read implements Reader.
func (m *MemLog) Read(ctx context.Context, filter string, from uint64) iter.Seq2[events.Envelope, error] {
	m.mu.Lock()
	snapshot := append([]events.Envelope(nil), m.envs...)
	m.mu.Unlock()
	return func(yield func(events.Envelope, error) bool) {
		for _, e := range snapshot {
			if e.Seq >= from && matches(filter, e.Subject) {
				if !yield(e, nil) {
					return
				}
			}
		}
	}
}

// matches supports the filters the loop uses: exact, or a prefix ending ">".
func matches(filter, subject string) bool {
	if p, ok := strings.CutSuffix(filter, ">"); ok {
		return strings.HasPrefix(subject, p)
	}
	return filter == subject
}
