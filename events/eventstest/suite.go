package eventstest

import (
	"context"
	"errors"
	"iter"
	"slices"
	"testing"

	"github.com/my-agent-crew/crew/events"
)

// Log is what every implementation of the event log provides: events.Log
// and MemLog. It is the union of the loop's Reader and Appender.
type Log interface {
	Append(ctx context.Context, scope events.Scope, expect uint64, envs ...events.Envelope) ([]events.Envelope, error)
	Read(ctx context.Context, filter string, from uint64) iter.Seq2[events.Envelope, error]
	Last(ctx context.Context, filter string) (uint64, error)
	Redactor() *events.Redactor
	Sync(ctx context.Context) error
}

var (
	_ Log = (*events.Log)(nil)
	_ Log = (*MemLog)(nil)
)

// TestLog is the conformance suite of Log: each subtest gets a fresh, empty
// log from open. Run it against every implementation, so that a fake cannot
// drift from the real thing.
func TestLog(t *testing.T, open func(t *testing.T) Log) {
	for _, tc := range []struct {
		name string
		test func(t *testing.T, log Log)
	}{
		{"AppendAssignsSubjectsAndIncreasingSequences", testAppendSequences},
		{"ExpectationIsPerScope", testExpectationPerScope},
		{"StaleExpectationIsConflictAndStoresNothing", testConflict},
		{"AnySkipsTheExpectation", testAny},
		{"SameMessageIDIsStoredOnce", testDedupe},
		{"EnvelopeWithoutIDTypeOrVersionIsRefused", testInvalidEnvelope},
		{"ReadRanges", testReadRanges},
		{"ReadStopsWhereTheLogWasWhenItStarted", testReadSnapshot},
		{"SubjectFilters", testFilters},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, open(t)) })
	}
}

func note(text string) events.Envelope {
	return events.MustNew(&events.MessageReceived{Channel: "web", Text: text})
}

func mustAppend(t *testing.T, log Log, scope events.Scope, expect uint64, envs ...events.Envelope) []events.Envelope {
	t.Helper()
	out, err := log.Append(t.Context(), scope, expect, envs...)
	if err != nil {
		t.Fatalf("append %s (expect %d): %v", scope, expect, err)
	}
	return out
}

func readAll(t *testing.T, log Log, filter string, from uint64) []events.Envelope {
	t.Helper()
	var out []events.Envelope
	for env, err := range log.Read(t.Context(), filter, from) {
		if err != nil {
			t.Fatalf("read %s from %d: %v", filter, from, err)
		}
		out = append(out, env)
	}
	return out
}

func last(t *testing.T, log Log, filter string) uint64 {
	t.Helper()
	seq, err := log.Last(t.Context(), filter)
	if err != nil {
		t.Fatalf("last %s: %v", filter, err)
	}
	return seq
}

func texts(t *testing.T, envs []events.Envelope) []string {
	t.Helper()
	out := []string{}
	for _, env := range envs {
		e, err := env.Decode()
		if err != nil {
			t.Fatalf("decode %s: %v", env.Subject, err)
		}
		switch e := e.(type) {
		case *events.MessageReceived:
			out = append(out, e.Text)
		case *events.RunFinished:
			out = append(out, "finished:"+e.RunID)
		default:
			out = append(out, env.Type)
		}
	}
	return out
}

func seqs(envs []events.Envelope) []uint64 {
	out := []uint64{}
	for _, e := range envs {
		out = append(out, e.Seq)
	}
	return out
}

func testAppendSequences(t *testing.T, log Log) {
	c := events.Conv("c1")
	if got := last(t, log, c.Filter()); got != 0 {
		t.Fatalf("Last of an empty scope = %d, want 0", got)
	}
	in := []events.Envelope{note("one"), note("two")}
	out := mustAppend(t, log, c, 0, in...)
	if len(out) != 2 {
		t.Fatalf("append returned %d envelopes, want 2", len(out))
	}
	for i, env := range out {
		if env.Subject != "crew.conv.c1.message_received" {
			t.Errorf("out[%d].Subject = %q, want crew.conv.c1.message_received", i, env.Subject)
		}
		if env.ID != in[i].ID || !env.Time.Equal(in[i].Time) || string(env.Data) != string(in[i].Data) {
			t.Errorf("out[%d] = %+v, want the appended envelope %+v", i, env, in[i])
		}
	}
	if out[0].Seq == 0 || out[1].Seq <= out[0].Seq {
		t.Errorf("sequences = %v, want increasing from ≥ 1", seqs(out))
	}
	if got := last(t, log, c.Filter()); got != out[1].Seq {
		t.Errorf("Last = %d, want %d", got, out[1].Seq)
	}
	got := readAll(t, log, c.Filter(), 0)
	if !slices.Equal(seqs(got), seqs(out)) || !slices.Equal(texts(t, got), []string{"one", "two"}) {
		t.Errorf("read = %v %v, want %v [one two]", seqs(got), texts(t, got), seqs(out))
	}
	for i := range got {
		if got[i].Subject != out[i].Subject || got[i].ID != out[i].ID || !got[i].Time.Equal(out[i].Time) {
			t.Errorf("read[%d] = %+v, want %+v", i, got[i], out[i])
		}
	}
}

func testExpectationPerScope(t *testing.T, log Log) {
	c1, c2 := events.Conv("c1"), events.Conv("c2")
	a := mustAppend(t, log, c1, 0, note("a"))
	// Another scope moves the stream, not c1's expectation; and a new scope
	// expects 0 even though the stream is not empty.
	b := mustAppend(t, log, c2, 0, note("b"))
	if b[0].Seq <= a[0].Seq {
		t.Errorf("stream sequences %d then %d, want increasing across scopes", a[0].Seq, b[0].Seq)
	}
	mustAppend(t, log, c1, a[0].Seq, note("c"))
	// An event of another type on the scope counts too.
	run := mustAppend(t, log, c1, last(t, log, c1.Filter()), events.MustNew(&events.RunFinished{RunID: "r1"}))
	if run[0].Subject != "crew.conv.c1.run_finished" {
		t.Errorf("subject = %q, want crew.conv.c1.run_finished", run[0].Subject)
	}
	if got := last(t, log, c1.Filter()); got != run[0].Seq {
		t.Errorf("Last(c1) = %d, want %d (the run_finished)", got, run[0].Seq)
	}
	// Several envelopes in one call chain their expectations.
	more := mustAppend(t, log, c1, run[0].Seq, note("d"), note("e"), note("f"))
	if len(more) != 3 {
		t.Fatalf("chained append stored %d, want 3", len(more))
	}
	if got := texts(t, readAll(t, log, c1.Filter(), 0)); !slices.Equal(got, []string{"a", "c", "finished:r1", "d", "e", "f"}) {
		t.Errorf("c1 = %v", got)
	}
	if got := texts(t, readAll(t, log, c2.Filter(), 0)); !slices.Equal(got, []string{"b"}) {
		t.Errorf("c2 = %v, want [b]", got)
	}
}

func testConflict(t *testing.T, log Log) {
	c := events.Conv("c1")
	first := mustAppend(t, log, c, 0, note("a"))
	mustAppend(t, log, c, first[0].Seq, note("b"))
	for _, expect := range []uint64{0, first[0].Seq, first[0].Seq + 100} {
		out, err := log.Append(t.Context(), c, expect, note("late"), note("later"))
		if !errors.Is(err, events.ErrConflict) {
			t.Fatalf("expect %d on a scope at %d: err = %v, want ErrConflict", expect, last(t, log, c.Filter()), err)
		}
		var ce *events.ConflictError
		if !errors.As(err, &ce) || ce.Subject != "crew.conv.c1.message_received" || ce.Expected != expect {
			t.Errorf("expect %d: err = %#v, want a *ConflictError naming the subject and %d", expect, err, expect)
		}
		if len(out) != 0 {
			t.Errorf("expect %d: a conflict returned %d stored envelopes", expect, len(out))
		}
	}
	// A non-zero expectation on an empty scope is a conflict too.
	if _, err := log.Append(t.Context(), events.Conv("empty"), 7, note("x")); !errors.Is(err, events.ErrConflict) {
		t.Errorf("expect 7 on an empty scope: err = %v, want ErrConflict", err)
	}
	if got := texts(t, readAll(t, log, events.Root+".>", 0)); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("log = %v, want [a b]: nothing stored on conflict", got)
	}
}

func testAny(t *testing.T, log Log) {
	j := events.Job("j1")
	mustAppend(t, log, j, events.Any, note("a"))
	mustAppend(t, log, j, events.Any, note("b"), note("c"))
	if got := texts(t, readAll(t, log, j.Filter(), 0)); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("job = %v, want [a b c]", got)
	}
}

func testDedupe(t *testing.T, log Log) {
	// An unchecked append retried (same id) is answered with the original
	// sequence and stores nothing: the server's duplicate window.
	j := events.Job("j1")
	once := note("once")
	first := mustAppend(t, log, j, events.Any, once)
	if again := mustAppend(t, log, j, events.Any, once); len(again) != 1 || again[0].Seq != first[0].Seq {
		t.Errorf("unchecked retry = %v, want the original sequence %d", seqs(again), first[0].Seq)
	}
	// A checked append retried with its own expectation, as after a try
	// stored but not acknowledged: recognised, nothing stored.
	c := events.Conv("c1")
	env := note("checked")
	stored := mustAppend(t, log, c, 0, env)
	if again := mustAppend(t, log, c, 0, env); len(again) != 1 || again[0].Seq != stored[0].Seq {
		t.Errorf("checked retry = %v, want the original sequence %d", seqs(again), stored[0].Seq)
	}
	// Still recognised once the pass it started stored more behind it (an
	// acknowledgement slow under a burst): the scope's first event after
	// the retry's expectation is the retried one.
	b := mustAppend(t, log, c, stored[0].Seq, note("b"))
	if again, err := log.Append(t.Context(), c, 0, env); err != nil || len(again) != 1 || again[0].Seq != stored[0].Seq {
		t.Errorf("retry after another event = %v, %v; want the original sequence %d", seqs(again), err, stored[0].Seq)
	}
	// Another event with that stale expectation is a conflict.
	if _, err := log.Append(t.Context(), c, 0, note("late")); !errors.Is(err, events.ErrConflict) {
		t.Errorf("a new event with a stale expectation: err = %v, want ErrConflict", err)
	}
	// A retry of a batch whose first part was stored stores the rest once,
	// the recognised part carrying the expectation on.
	third := note("c")
	part := mustAppend(t, log, c, b[0].Seq, third)
	rest := mustAppend(t, log, c, b[0].Seq, third, note("d"))
	if len(rest) != 2 || rest[0].Seq != part[0].Seq || rest[1].Seq <= rest[0].Seq {
		t.Errorf("batch retry = %v, want [%d, a new one]", seqs(rest), part[0].Seq)
	}
	if got := texts(t, readAll(t, log, c.Filter(), 0)); !slices.Equal(got, []string{"checked", "b", "c", "d"}) {
		t.Errorf("conversation = %v, want [checked b c d]", got)
	}
	if got := texts(t, readAll(t, log, j.Filter(), 0)); !slices.Equal(got, []string{"once"}) {
		t.Errorf("job = %v, want [once]", got)
	}
}

func testInvalidEnvelope(t *testing.T, log Log) {
	c := events.Conv("c1")
	for name, mutate := range map[string]func(*events.Envelope){
		"no id":      func(e *events.Envelope) { e.ID = "" },
		"no type":    func(e *events.Envelope) { e.Type = "" },
		"no version": func(e *events.Envelope) { e.V = 0 },
	} {
		env := note("x")
		mutate(&env)
		if _, err := log.Append(t.Context(), c, 0, env); err == nil {
			t.Errorf("%s: append succeeded, want an error", name)
		}
	}
	if got := last(t, log, events.Root+".>"); got != 0 {
		t.Errorf("Last = %d after refused appends, want 0", got)
	}
}

func testReadRanges(t *testing.T, log Log) {
	c := events.Conv("c1")
	out := mustAppend(t, log, c, 0, note("1"), note("2"), note("3"), note("4"))
	mustAppend(t, log, events.Conv("c2"), 0, note("other"))
	for _, tc := range []struct {
		from uint64
		want []string
	}{
		{0, []string{"1", "2", "3", "4"}},
		{1, []string{"1", "2", "3", "4"}},
		{out[1].Seq, []string{"2", "3", "4"}},
		{out[3].Seq, []string{"4"}},
		{out[3].Seq + 1, []string{}},
		{out[3].Seq + 1000, []string{}},
	} {
		if got := texts(t, readAll(t, log, c.Filter(), tc.from)); !slices.Equal(got, tc.want) {
			t.Errorf("read from %d = %v, want %v", tc.from, got, tc.want)
		}
	}
	if got := readAll(t, log, events.Conv("nobody").Filter(), 0); len(got) != 0 {
		t.Errorf("empty scope read %d events", len(got))
	}
	// A reader that stops early gets no more.
	n := 0
	for _, err := range log.Read(t.Context(), c.Filter(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Errorf("stopped reader saw %d events", n)
	}
}

func testReadSnapshot(t *testing.T, log Log) {
	c := events.Conv("c1")
	out := mustAppend(t, log, c, 0, note("1"), note("2"))
	var got []string
	lastSeq := out[1].Seq
	for env, err := range log.Read(t.Context(), c.Filter(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, texts(t, []events.Envelope{env})...)
		if len(got) == 1 {
			lastSeq = mustAppend(t, log, c, lastSeq, note("during"))[0].Seq
		}
	}
	if !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("read = %v, want [1 2]: an event stored during the read is the next read's", got)
	}
}

func testFilters(t *testing.T, log Log) {
	add := func(scope events.Scope, e events.Event) uint64 {
		return mustAppend(t, log, scope, events.Any, events.MustNew(e))[0].Seq
	}
	c1msg := add(events.Conv("c1"), &events.MessageReceived{Text: "c1"})
	c1fin := add(events.Conv("c1"), &events.RunFinished{RunID: "r1"})
	c10fin := add(events.Conv("c10"), &events.RunFinished{RunID: "r10"})
	c2msg := add(events.Conv("c2"), &events.MessageReceived{Text: "c2"})
	jobMsg := add(events.Job("c1"), &events.MessageReceived{Text: "job"})
	all := []uint64{c1msg, c1fin, c10fin, c2msg, jobMsg}
	for _, tc := range []struct {
		filter string
		want   []uint64
	}{
		{"crew.>", all},
		{"crew.conv.>", []uint64{c1msg, c1fin, c10fin, c2msg}},
		{events.Conv("c1").Filter(), []uint64{c1msg, c1fin}},
		{"crew.conv.c1.run_finished", []uint64{c1fin}},
		{"crew.conv.*.run_finished", []uint64{c1fin, c10fin}},
		{"crew.*.c1.message_received", []uint64{c1msg, jobMsg}},
		{"crew.*.*.*", all},
		{"crew.conv.*", []uint64{}},
		{"crew.*.c1.>", []uint64{c1msg, c1fin, jobMsg}},
		{"crew.conv.c1.run_finished.>", []uint64{}},
		{"crew.conv.c", []uint64{}},
		{"crew.tg.>", []uint64{}},
	} {
		got := seqs(readAll(t, log, tc.filter, 0))
		if !slices.Equal(got, tc.want) {
			t.Errorf("read %q = %v, want %v", tc.filter, got, tc.want)
		}
		wantLast := uint64(0)
		if len(tc.want) > 0 {
			wantLast = tc.want[len(tc.want)-1]
		}
		if got := last(t, log, tc.filter); got != wantLast {
			t.Errorf("last %q = %d, want %d", tc.filter, got, wantLast)
		}
	}
	if t.Failed() {
		t.Logf("sequences: c1 message %d, c1 finished %d, c10 finished %d, c2 message %d, job message %d", c1msg, c1fin, c10fin, c2msg, jobMsg)
	}
}
