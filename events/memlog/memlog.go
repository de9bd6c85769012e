// Package memlog is an in-memory event log with events.Log's semantics:
// replay runs the loop on one, so a replay can never touch the real log.
// Production code (loop.Replay) uses it; eventstest re-exports it for tests.
package memlog

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/my-agent-crew/crew/events"
)

// MemLog is an in-memory log with events.Log's semantics, held to them by
// eventstest.TestLog: per-scope expected sequences, message-id dedupe, stream order and
// NATS subject filters ("*" one token, ">" the rest). Replay runs the loop on
// one, so a replay can never touch the real log.
//
// Unlike JetStream, MemLog remembers message ids forever (the real window is
// two minutes) and has no Follow.
type MemLog struct {
	mu     sync.Mutex
	envs   []events.Envelope
	seq    uint64
	ids    map[string]uint64 // message id → the sequence it was stored at
	before func(env events.Envelope) error
	// secrets redact every append, as events.Log's redactor does.
	secrets *events.Redactor
}

// New holds envs (with their subjects and sequences) as already stored.
func New(envs []events.Envelope) *MemLog {
	m := &MemLog{ids: map[string]uint64{}, secrets: events.NewRedactor()}
	for _, e := range envs {
		m.envs = append(m.envs, e)
		m.seq = max(m.seq, e.Seq)
		m.ids[e.ID] = e.Seq
	}
	return m
}

// Redactor is the log's redactor, as events.Log.Redactor: every append is
// redacted with it.
func (m *MemLog) Redactor() *events.Redactor { return m.secrets }

// Sync is events.Log.Sync: memory has nothing to make durable.
func (m *MemLog) Sync(context.Context) error { return nil }

// Redact makes r the log's redactor (a replay's are the home's secrets);
// call it before the first append.
func (m *MemLog) Redact(r *events.Redactor) { m.secrets = r }

// OnAppend makes fn see each event about to be appended, with its subject
// and sequence; an error from fn refuses that event (and those after it in
// the same call) and is returned by Append.
func (m *MemLog) OnAppend(fn func(env events.Envelope) error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.before = fn
}

// Append stores envs, in order, on scope; expect is as for events.Log.
func (m *MemLog) Append(ctx context.Context, scope events.Scope, expect uint64, envs ...events.Envelope) ([]events.Envelope, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]events.Envelope, 0, len(envs))
	for _, env := range envs {
		subject := scope.Subject(env.Type)
		if env.ID == "" || env.Type == "" || env.V == 0 {
			return out, fmt.Errorf("append %s: envelope without id, type or version", scope)
		}
		if expect != events.Any && expect != m.lastLocked(scope.Filter()) {
			// A retry of an append stored before (its own expectation,
			// now stale): the real log recognises it as the scope's first
			// message after that expectation — however much was stored
			// behind it since — and answers with its sequence.
			if seq, dup := m.ids[env.ID]; dup && seq == m.firstAfterLocked(scope.Filter(), expect) {
				env.Subject, env.Seq = subject, seq
				out = append(out, env)
				expect = seq
				continue
			}
			return out, &events.ConflictError{Subject: subject, Expected: expect, Err: fmt.Errorf("memlog: last sequence is %d", m.lastLocked(scope.Filter()))}
		}
		if seq, dup := m.ids[env.ID]; dup { // a retry: the original's sequence, nothing stored
			env.Subject, env.Seq = subject, seq
			out = append(out, env)
			if expect != events.Any {
				expect = seq
			}
			continue
		}
		env.Data = m.secrets.JSON(env.Data)
		env.Subject, env.Seq = subject, m.seq+1
		if m.before != nil {
			if err := m.before(env); err != nil {
				return out, err
			}
		}
		m.seq++
		m.envs = append(m.envs, env)
		m.ids[env.ID] = env.Seq
		out = append(out, env)
		if expect != events.Any {
			expect = env.Seq
		}
	}
	return out, nil
}

// Put stores an already made event as it is, without checks and without
// OnAppend: a recorded input that a replay feeds back.
func (m *MemLog) Put(scope events.Scope, env events.Envelope) events.Envelope {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	env.Subject, env.Seq = scope.Subject(env.Type), m.seq
	m.envs = append(m.envs, env)
	m.ids[env.ID] = env.Seq
	return env
}

// Last returns the sequence of the last event matching filter, or 0.
func (m *MemLog) Last(ctx context.Context, filter string) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastLocked(filter), nil
}

// firstAfterLocked is the sequence of filter's first event after seq, 0
// when none.
func (m *MemLog) firstAfterLocked(filter string, seq uint64) uint64 {
	for _, e := range m.envs {
		if e.Seq > seq && Matches(filter, e.Subject) {
			return e.Seq
		}
	}
	return 0
}

func (m *MemLog) lastLocked(filter string) uint64 {
	for i := len(m.envs) - 1; i >= 0; i-- {
		if Matches(filter, m.envs[i].Subject) {
			return m.envs[i].Seq
		}
	}
	return 0
}

// Read yields the events matching filter with sequence ≥ from, in order, up
// to the last one stored when the iteration starts.
func (m *MemLog) Read(ctx context.Context, filter string, from uint64) iter.Seq2[events.Envelope, error] {
	return func(yield func(events.Envelope, error) bool) {
		m.mu.Lock()
		snapshot := append([]events.Envelope(nil), m.envs...)
		m.mu.Unlock()
		for _, e := range snapshot {
			if e.Seq >= from && Matches(filter, e.Subject) {
				if !yield(e, nil) {
					return
				}
			}
		}
	}
}

// Matches reports whether subject matches a NATS subject filter: tokens are
// separated by ".", "*" matches exactly one token and a final ">" one or
// more.
func Matches(filter, subject string) bool {
	ft, st := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, f := range ft {
		if f == ">" && i == len(ft)-1 {
			return len(st) > i
		}
		if i >= len(st) || (f != "*" && f != st[i]) {
			return false
		}
	}
	return len(ft) == len(st)
}
