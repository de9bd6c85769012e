package projections

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/nats-io/nats.go/jetstream"
	"go.etcd.io/bbolt"
)

var errSimulatedCrash = errors.New("simulated crash between commit and ack")

func consumerInfo(t *testing.T, log *events.Log, name string) *jetstream.ConsumerInfo {
	t.Helper()
	cons, err := log.Stream().Consumer(t.Context(), consumerName(log, name))
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func messages(t *testing.T, r *Runner, conv string) int {
	t.Helper()
	c, err := GetConversation(r.db, conv)
	if err != nil {
		t.Fatal(err)
	}
	return c.Messages
}

// The process dies after committing an event and before acking it: the
// next Open finds the consumer's ack floor behind the checkpoint, starts
// the consumer after the checkpoint, and nothing is applied twice.
func TestCrashBetweenApplyAndAckDoesNotDoubleApply(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	s := newSeeder(t, log)
	s.conv("c1", &events.ConversationOpened{Agent: "coach", Channel: "web"})
	crashAt := s.conv("c1", &events.MessageReceived{Channel: "web", Text: "one"})
	db := openDB(t, "")

	r := startRunner(t, log, db, config{afterCommit: func(name string, seq uint64) error {
		if name == "conversations" && seq == crashAt {
			return errSimulatedCrash
		}
		return nil
	}})
	if err := r.WaitFor(ctx, crashAt); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The crash is real: JetStream still waits for the ack of the batch
	// that held crashAt (one or both events, as they were delivered).
	if info := consumerInfo(t, log, "conversations"); info.NumAckPending == 0 || info.AckFloor.Stream >= crashAt {
		t.Fatalf("consumer after crash: ack pending %d, ack floor %d; want ≥ 1 pending, floor < %d", info.NumAckPending, info.AckFloor.Stream, crashAt)
	}

	r = startRunner(t, log, db, config{})
	last := s.conv("c1", &events.MessageReceived{Channel: "web", Text: "two"})
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if got, want := messages(t, r, "c1"), 2; got != want {
		t.Errorf("messages: got %d, want %d", got, want)
	}
	for _, st := range r.Status(ctx) {
		if st.Checkpoint != last || st.Lag != 0 || st.Error != "" || !st.Running {
			t.Errorf("status after restart: %+v", st)
		}
	}
}

// An ack lost while running (connection trouble) makes JetStream redeliver
// the batch after AckWait; it is skipped, not applied again. (The lost ack
// is the last batch's: a later batch's ack would cover it.)
func TestRedeliveryIsSkipped(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	s := newSeeder(t, log)
	s.conv("c1", &events.ConversationOpened{Agent: "coach", Channel: "web"})
	s.conv("c1", &events.MessageReceived{Channel: "web", Text: "one"})
	last := s.conv("c1", &events.MessageReceived{Channel: "web", Text: "two"})
	lost := last
	db := openDB(t, "")

	r := startRunner(t, log, db, config{ackWait: 100 * time.Millisecond, afterCommit: func(name string, seq uint64) error {
		if name == "conversations" && seq == lost {
			return errSimulatedCrash
		}
		return nil
	}})
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	err := r.waitUntil(ctx, func() (bool, error) {
		return r.workers[0].p.Name() == "conversations" && r.workers[0].skipped > 0, nil
	})
	if err != nil {
		t.Fatalf("no redelivery: %v", err)
	}
	if got, want := messages(t, r, "c1"), 2; got != want {
		t.Errorf("messages: got %d, want %d", got, want)
	}
}

// Deleting the bbolt file and reopening rebuilds from the start: the
// consumer, far ahead of checkpoint 0, is recreated from the beginning.
func TestDeletedDatabaseIsRebuiltFromTheStart(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	s := newSeeder(t, log)
	s.conv("c1", &events.ConversationOpened{Agent: "coach", Channel: "web"})
	s.conv("c1", &events.MessageReceived{Channel: "web", Text: "hello"})
	s.conv("c1", &events.RunStarted{RunID: "r1", Agent: "coach", Trigger: "message"})
	last := s.conv("c1", &events.RunFinished{RunID: "r1", Status: events.RunDone})
	path := filepath.Join(t.TempDir(), "projections.db")

	db := openDB(t, path)
	r := startRunner(t, log, db, config{})
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want := dumpAll(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}

	db = openDB(t, path)
	r = startRunner(t, log, db, config{})
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if got := dumpAll(t, db); got != want {
		t.Errorf("reopened projections differ:\n%s", firstDiff(got, want))
	}
}

// An event this build cannot decode outside any conversation stops the
// projection at that event; it is neither skipped nor acked, and a restart
// stops at it again. (A conversation's is passed and parks that
// conversation: TestUndecodableConversationEventParksIt.)
func TestDecodeFailureStopsProjection(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	s := newSeeder(t, log)
	s.conv("c1", &events.ConversationOpened{Agent: "coach", Channel: "web"})
	s.conv("c1", &events.MessageReceived{Channel: "web", Text: "one"})
	const subject = "crew.agent.coach.mystery_happened"
	ack, err := log.JetStream().Publish(ctx, subject,
		[]byte(`{"type":"mystery_happened","v":1,"id":"m1","time":"2026-11-30T09:00:00Z","data":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	bad := ack.Sequence
	last := s.conv("c1", &events.MessageReceived{Channel: "web", Text: "two"})
	db := openDB(t, "")

	for range 2 { // and again after a restart
		r := startRunner(t, log, db, config{})
		if err := r.WaitFor(ctx, last); !errors.Is(err, ErrStopped) || !errors.Is(err, events.ErrUnknownType) {
			t.Fatalf("WaitFor: got %v, want ErrStopped and ErrUnknownType", err)
		}
		err := r.waitUntil(ctx, func() (bool, error) {
			for _, w := range r.workers {
				if w.err == nil {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("not every projection stopped: %v", err)
		}
		for _, st := range r.Status(ctx) {
			if st.Running || st.ErrorSubject != subject || st.ErrorSeq != bad || st.Checkpoint != bad-1 || st.Lag != 2 ||
				!strings.Contains(st.Error, "mystery_happened") {
				t.Errorf("status: %+v; want stopped at %s seq %d", st, subject, bad)
			}
		}
		if got, want := messages(t, r, "c1"), 1; got != want {
			t.Errorf("messages: got %d, want %d", got, want)
		}
		if err := r.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A database ahead of the stream (another home's file) is not fed; Status
// says why. WaitFor fails rather than hang.
func TestCheckpointBeyondStreamIsReported(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	db := openDB(t, "")
	if err := db.Update(func(tx *bbolt.Tx) error { return writeCheckpoint(tx, "runs", 99) }); err != nil {
		t.Fatal(err)
	}
	r := startRunner(t, log, db, config{})
	seq := newSeeder(t, log).conv("c1", &events.MessageReceived{Channel: "web", Text: "hi"})
	if err := r.WaitFor(ctx, seq); err != nil {
		t.Fatal(err) // runs is at 99 already; conversations applies seq
	}
	if err := r.WaitFor(ctx, 100); !errors.Is(err, ErrStopped) {
		t.Fatalf("WaitFor: got %v, want ErrStopped", err)
	}
	for _, st := range r.Status(ctx) {
		if st.Name == "runs" && (st.Running || !strings.Contains(st.Error, "beyond the stream")) {
			t.Errorf("status: %+v", st)
		}
	}
}

// Close ends WaitFor.
func TestWaitForAfterClose(t *testing.T) {
	_, log := eventstest.Start(t)
	r := startRunner(t, log, openDB(t, ""), config{})
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitFor(testCtx(t), 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitFor: got %v, want ErrClosed", err)
	}
}

// gated is a projection added by an upgrade.
type gated struct{}

func (gated) Name() string      { return "gated" }
func (gated) Buckets() []string { return []string{"gated"} }
func (gated) Apply(tx *Tx, env events.Envelope) error {
	return tx.Bucket([]byte("gated")).Put(u64(env.Seq), []byte(env.Type))
}

// A projection new in this build starts at zero on a consumer of its own:
// the projections already caught up go on applying new events while it is
// still catching up (held here after its first batch), and then it is
// caught up too.
func TestAddedProjectionCatchesUpWithoutHoldingTheOthers(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	s := newSeeder(t, log)
	s.conv("c1", &events.ConversationOpened{Agent: "coach", Channel: "web"})
	seq := s.conv("c1", &events.MessageReceived{Channel: "web", Text: "one"})
	db := openDB(t, "")
	r := startRunner(t, log, db, config{})
	if err := r.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}

	held, release := make(chan uint64, 1), make(chan struct{})
	var once sync.Once
	r, err := open(ctx, log, db, nil, config{afterCommit: func(name string, seq uint64) error {
		if name == "gated" {
			once.Do(func() { held <- seq; <-release })
		}
		return nil
	}}, append(All(), gated{})...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	if len(r.groups) != 2 || len(r.groups[0].members) != len(All()) || r.groups[1].consumer != "proj_gated" {
		t.Fatalf("groups: %d, want the caught-up ones together and gated alone", len(r.groups))
	}
	gatedAt := <-held
	last := s.conv("c1", &events.MessageReceived{Channel: "web", Text: "two"})
	eventstest.Eventually(t, "the caught-up projections to apply the new event", func() bool {
		for _, st := range r.Status(ctx) {
			if st.Name != "gated" && st.Checkpoint != last {
				return false
			}
		}
		return true
	})
	for _, st := range r.Status(ctx) {
		if st.Name == "gated" && st.Checkpoint != gatedAt {
			t.Fatalf("gated at %d, want still %d", st.Checkpoint, gatedAt)
		}
	}
	if got, want := messages(t, r, "c1"), 2; got != want {
		t.Errorf("messages: got %d, want %d", got, want)
	}
	close(release)
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
}

// A delivery lost in transit (a pull's messages in flight when the
// connection died: the server counts them delivered, and the next batch's
// AckAll would acknowledge them) is not passed over: the Runner meets the
// gap at the event after it and reads again from its checkpoint, so the
// conversation has all its messages (TestClusterFailover's lost
// conversations).
func TestLostDeliveryIsReadAgain(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	s := newSeeder(t, log)
	s.conv("c1", &events.ConversationOpened{Agent: "coach", Channel: "web"})
	s.conv("c1", &events.MessageReceived{Channel: "web", Text: "one"})
	lost := s.conv("c1", &events.MessageReceived{Channel: "web", Text: "two"})
	s.conv("c1", &events.MessageReceived{Channel: "web", Text: "three"})
	db := openDB(t, "")

	var dropped atomic.Bool
	r := startRunner(t, log, db, config{lose: func(seq uint64) bool {
		return seq == lost && dropped.CompareAndSwap(false, true)
	}})
	last := s.conv("c1", &events.MessageReceived{Channel: "web", Text: "four"})
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if !dropped.Load() {
		t.Fatal("the delivery was never lost: the test tests nothing")
	}
	if got, want := messages(t, r, "c1"), 4; got != want {
		t.Errorf("messages: got %d, want %d (the lost delivery was passed over)", got, want)
	}
	for _, st := range r.Status(ctx) {
		if st.Checkpoint != last || st.Error != "" || !st.Running {
			t.Errorf("status: %+v", st)
		}
	}
}

// caughtUp waits, without WaitFor (whose callers make a batch commit at
// once), until every projection of r has applied seq.
func caughtUp(t *testing.T, r *Runner, seq uint64) {
	t.Helper()
	err := r.waitUntil(testCtx(t), func() (bool, error) {
		for _, w := range r.workers {
			if w.checkpoint < seq {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("projections never applied %d: %v", seq, err)
	}
}

// Live events that follow one another (a step's) are one transaction:
// with nobody waiting, a batch stays open for the events after its first
// (here for as long as it takes to fill it) and commits them together.
func TestLiveEventsDeliveredTogetherAreOneCommit(t *testing.T) {
	_, log := eventstest.Start(t)
	const n = 5
	r := startRunner(t, log, openDB(t, ""), config{linger: time.Hour, batch: n})
	s := newSeeder(t, log)
	s.conv("c1", &events.ConversationOpened{Agent: "coach", Channel: "web"})
	var last uint64
	for i := range n - 1 {
		last = s.conv("c1", &events.MessageReceived{Channel: "web", Text: fmt.Sprint("message ", i)})
	}
	caughtUp(t, r, last)
	if got, want := r.Commits(), uint64(1); got != want {
		t.Errorf("commits for %d live events: got %d, want %d", n, got, want)
	}
	if got, want := messages(t, r, "c1"), n-1; got != want {
		t.Errorf("messages: got %d, want %d", got, want)
	}
}

// A WaitFor caller does not wait for a batch to linger: the batch holding
// the event it waits for commits at once (here the batch would otherwise
// stay open for an hour), and the waiter is forgotten when it returns.
func TestWaitForCommitsALingeringBatch(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	r := startRunner(t, log, openDB(t, ""), config{linger: time.Hour})
	s := newSeeder(t, log)
	s.conv("c1", &events.ConversationOpened{Agent: "coach", Channel: "web"})
	s.conv("c1", &events.MessageReceived{Channel: "web", Text: "one"})
	last := s.conv("c1", &events.MessageReceived{Channel: "web", Text: "two"})
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if got, want := messages(t, r, "c1"), 2; got != want {
		t.Errorf("messages: got %d, want %d", got, want)
	}
	if got, want := r.Commits(), uint64(1); got != want {
		t.Errorf("commits: got %d, want %d (the three events lingered together until the waiter came)", got, want)
	}
	// A waiter that gives up is forgotten too.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.WaitFor(cctx, last+1); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitFor with a cancelled context: got %v", err)
	}
	r.mu.Lock()
	waits := len(r.waits)
	r.mu.Unlock()
	if waits != 0 {
		t.Errorf("waiters left after WaitFor returned: %d", waits)
	}
}

// With nobody waiting, a lingering batch still commits once its time is
// up (lingerMax): a reader that does not wait sees the event then.
func TestLingeringBatchCommitsWithoutAWaiter(t *testing.T) {
	_, log := eventstest.Start(t)
	r := startRunner(t, log, openDB(t, ""), config{})
	seq := newSeeder(t, log).conv("c1", &events.MessageReceived{Channel: "web", Text: "hi"})
	caughtUp(t, r, seq)
	if got, want := messages(t, r, "c1"), 1; got != want {
		t.Errorf("messages: got %d, want %d", got, want)
	}
}

// Lags, doctor's lines on a stopped home: the stream's, then one per read
// model, each its checkpoint and how far behind the log's last sequence
// it is (none for one beyond it); a stream that cannot be asked is one
// line saying why.
func TestLagsNameEveryProjection(t *testing.T) {
	srv, log := eventstest.Start(t)
	seed := newSeeder(t, log)
	for range 9 {
		seed.conv("c1", &events.MessageReceived{Channel: "web", Text: "hi"})
	}
	db := openDB(t, "")
	if err := db.Update(func(tx *bbolt.Tx) error {
		if err := writeCheckpoint(tx, "runs", 5); err != nil {
			return err
		}
		return writeCheckpoint(tx, "conversations", 99)
	}); err != nil {
		t.Fatal(err)
	}
	got := Lags(t.Context(), log, db)
	if len(got) != 1+len(All()) {
		t.Fatalf("Lags = %q, want the stream's line and one per projection of All", got)
	}
	if !strings.HasPrefix(got[0], "  stream CREW: 9 events, ") || !strings.HasSuffix(got[0], ", sequences 1..9") {
		t.Errorf("line 0 = %q, want the stream's", got[0])
	}
	got = got[1:]
	for i, p := range All() {
		want := fmt.Sprintf("  projection %s: at 0, lag 9", p.Name())
		switch p.Name() {
		case "runs":
			want = "  projection runs: at 5, lag 4"
		case "conversations":
			want = "  projection conversations: at 99, lag 0"
		}
		if got[i] != want {
			t.Errorf("line %d = %q, want %q", i+1, got[i], want)
		}
	}
	srv.Close()
	if got := Lags(t.Context(), log, db); len(got) != 1 || !strings.HasPrefix(got[0], "  stream CREW: ") {
		t.Errorf("Lags of a closed server = %q, want one line saying why", got)
	}
}

// watched is a projection that keeps a weak pointer to every message it
// is given: whether anything still holds the event after it is applied.
type watched struct {
	mu   sync.Mutex
	seen []weak.Pointer[events.MessageReceived]
}

func (*watched) Name() string      { return "watched" }
func (*watched) Buckets() []string { return []string{"watched"} }
func (w *watched) Apply(_ *Tx, env events.Envelope) error {
	e, err := env.Decode()
	if m, ok := e.(*events.MessageReceived); ok && err == nil {
		w.mu.Lock()
		w.seen = append(w.seen, weak.Make(m))
		w.mu.Unlock()
	}
	return err
}

// A batch's events are let go once it is committed: the catch-up's last
// full batch is not held (with its messages) by the smaller live batches
// after it, which reuse its array (a million-event catch-up left 4,000
// events, ≈ 7 MB, in the heap of an idle serve: docs/performance.md,
// "Memory").
func TestRunnerHoldsNoEventAfterItsBatch(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	s := newSeeder(t, log)
	const n = 10
	for i := range n {
		s.conv("c1", &events.MessageReceived{Channel: "web", Text: fmt.Sprint("message ", i)})
	}
	w := &watched{}
	// The batch lingers until it holds n events: the catch-up is one
	// batch of n, the live event after it one of its own.
	r, err := open(ctx, log, openDB(t, ""), nil, config{linger: time.Hour, batch: n}, w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	caughtUp(t, r, s.last[events.Conv("c1")])
	live := s.conv("c1", &events.MessageReceived{Channel: "web", Text: "live"})
	if err := r.WaitFor(ctx, live); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.seen) != n+1 {
		t.Fatalf("applied %d messages, want %d", len(w.seen), n+1)
	}
	held := 0
	for _, p := range w.seen[:n] {
		if p.Value() != nil {
			held++
		}
	}
	if held > 0 {
		t.Errorf("%d of the catch-up batch's %d events still held after the live batch committed", held, n)
	}
}

// On the embedded server the projections' consumer keeps its state in the
// server's memory (no consumer file rewritten as events flow): a restart
// of the server, which is a restart of the process, finds no consumer,
// and the next Open makes it again from the bbolt checkpoint, so every
// event is applied once, none lost and none twice. A consumer left in
// files by an older build is made again in memory.
func TestEmbeddedConsumerIsInMemoryAndMadeAgainFromTheCheckpoint(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	srv, log := eventstest.Start(t, eventstest.WithStoreDir(dir))
	s := newSeeder(t, log)
	s.conv("c1", &events.ConversationOpened{Agent: "coach", Channel: "web"})
	seq := s.conv("c1", &events.MessageReceived{Channel: "web", Text: "one"})
	db := openDB(t, "")
	r := startRunner(t, log, db, config{})
	if err := r.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
	if info := consumerInfo(t, log, "conversations"); !info.Config.MemoryStorage {
		t.Errorf("the embedded server's projections consumer keeps its state in files")
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// An older build's consumer, in files, acknowledged up to the
	// checkpoint: made again, in memory.
	name := consumerName(log, "conversations")
	if err := log.Stream().DeleteConsumer(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Stream().CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: name, FilterSubject: allEvents,
		AckPolicy: jetstream.AckAllPolicy, MaxAckPending: maxAckPending, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: seq + 1}); err != nil {
		t.Fatal(err)
	}
	r = startRunner(t, log, db, config{})
	if info := consumerInfo(t, log, "conversations"); !info.Config.MemoryStorage {
		t.Errorf("a consumer in files left by an older build was kept")
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Close()

	_, log = eventstest.Start(t, eventstest.WithStoreDir(dir))
	if _, err := log.Stream().Consumer(ctx, name); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("consumer after the server's restart: %v, want it gone", err)
	}
	s.log = log
	last := s.conv("c1", &events.MessageReceived{Channel: "web", Text: "two"})
	r = startRunner(t, log, db, config{})
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if got, want := messages(t, r, "c1"), 2; got != want {
		t.Errorf("messages after the restart: got %d, want %d", got, want)
	}
	for _, st := range r.Status(ctx) {
		if st.Checkpoint != last || st.Skipped != 0 || st.Error != "" {
			t.Errorf("status after the restart: %+v", st)
		}
	}
}

// CatchingUp counts what the slowest projection still has to apply of the
// log up to a sequence, and says caught up once every one holds it; a
// sequence further on is still counted (the answer is per sequence).
func TestCatchingUpCountsWhatIsLeftUpToTheSequence(t *testing.T) {
	ctx := testCtx(t)
	_, log := eventstest.Start(t)
	r := startRunner(t, log, openDB(t, ""), config{})
	s := newSeeder(t, log)
	first := s.conv("c1", &events.ConversationOpened{Agent: "master", Channel: "web"})
	if left, catching := r.CatchingUp(ctx, first+3); !catching || left < 3 {
		t.Fatalf("before the events: left %d, catching %v; want at least 3 left, catching", left, catching)
	}
	var last uint64
	for range 3 {
		last = s.conv("c1", &events.MessageReceived{Channel: "web", Text: "hi"})
	}
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if left, catching := r.CatchingUp(ctx, last); catching || left != 0 {
		t.Fatalf("caught up: left %d, catching %v; want 0, false", left, catching)
	}
	if left, catching := r.CatchingUp(ctx, last); catching || left != 0 {
		t.Fatalf("asked again: left %d, catching %v; want 0, false", left, catching)
	}
	if left, catching := r.CatchingUp(ctx, last+2); !catching || left != 2 {
		t.Fatalf("further on: left %d, catching %v; want 2, true", left, catching)
	}
}
