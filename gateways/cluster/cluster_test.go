package cluster

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
	"github.com/nats-io/nats.go/jetstream"
	"go.etcd.io/bbolt"
)

// R-ES-8: two crew processes on one cluster. A conversation one claims is
// refused to the other (naming its holder); a process is alive while it
// holds its life lease and gone once it gives it back.
func TestMembersClaimConversationsOneAtATime(t *testing.T) {
	srv, _ := eventstest.Start(t)
	ls, err := events.OpenLeases(t.Context(), srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	a, err := Join(t.Context(), ls, "n1", t.TempDir(), "serve", logger)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Join(t.Context(), ls, "n1", t.TempDir(), "serve", logger)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.Holder() == b.Holder() || a.Holder() == "" {
		t.Fatalf("holders %q and %q: want two distinct ones", a.Holder(), b.Holder())
	}
	c, err := a.Claimer()(t.Context(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Claimer()(t.Context(), "c1"); !errors.Is(err, loop.ErrClaimed) {
		t.Fatalf("b's claim of a's conversation: %v, want loop.ErrClaimed", err)
	}
	c.Release()
	c2, err := b.Claimer()(t.Context(), "c1")
	if err != nil {
		t.Fatalf("b's claim once a released it: %v", err)
	}
	c2.Release()

	alive := Alive(ls)
	if ok, err := alive(t.Context(), a.Holder()); err != nil || !ok {
		t.Fatalf("a alive: %v %v, want true", ok, err)
	}
	a.Close()
	if ok, err := alive(t.Context(), a.Holder()); err != nil || ok {
		t.Fatalf("a alive after Close: %v %v, want false", ok, err)
	}
	var none *Member
	if none.Holder() != "" || none.Claimer() != nil || Alive(nil) != nil {
		t.Fatal("no member (the embedded server): want no holder, no claimer, no alive check")
	}
}

// Report on a cluster that cannot be reached is the one line saying why,
// not a hang nor an empty line.
func TestReportOfAnUnreachableClusterSaysWhy(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "nats://" + l.Addr().String()
	l.Close() // nothing listens there now
	got := Report(t.Context(), events.ClientConfig{URL: url})
	if !strings.Contains(got, "cannot connect") || strings.Contains(got, "replicas") {
		t.Errorf("Report = %q, want the connection's error", got)
	}
}

// A look for conversations to adopt that cannot read the projections is
// logged at warn and counted (doctor and /healthz show it), not skipped in
// silence: a conversation left with work would stay so unseen.
func TestAdoptThatCannotReadTheProjectionsIsToldAndCounted(t *testing.T) {
	srv, _ := eventstest.Start(t)
	ls, err := events.OpenLeases(t.Context(), srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	m, err := Join(t.Context(), ls, "n1", t.TempDir(), "serve", slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "projections.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close() // every read of it fails now
	m.adoptEvery = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); m.adopt(ctx, db, nil) }()
	eventstest.Eventually(t, "two failed looks counted", func() bool { return m.Stats().AdoptFailures >= 2 })
	cancel()
	<-done
	st := m.Stats()
	if !strings.Contains(st.LastAdoptError, "database not open") {
		t.Errorf("LastAdoptError = %q, want the read's error", st.LastAdoptError)
	}
	if n := strings.Count(logs.String(), "level=WARN msg=\"cannot list the conversations with work to adopt"); uint64(n) != st.AdoptFailures {
		t.Errorf("%d warnings logged for %d failed looks:\n%s", n, st.AdoptFailures, logs.String())
	}
}

// A life lease another process took (its key written over, as after this
// process went unheard for a whole TTL) closes Lost once the loss is logged
// at error; Close then returns and gives nothing back that is not ours.
func TestLostLifeLeaseIsToldAndClosesLost(t *testing.T) {
	srv, _ := eventstest.Start(t)
	ls, err := events.OpenLeases(t.Context(), srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	m, err := Join(t.Context(), ls, "n1", t.TempDir(), "serve", slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Lost():
		t.Fatal("Lost closed while the lease is held")
	default:
	}
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(t.Context(), events.LeaseBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(t.Context(), processKey(m.Holder()), []byte("another process")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Lost():
	case <-time.After(3 * LeaseTTL):
		t.Fatal("Lost not closed after the life lease was taken")
	}
	if !strings.Contains(logs.String(), `level=ERROR msg="lost this process's lease`) {
		t.Errorf("the loss is not logged at error:\n%s", logs.String())
	}
	m.Close()
	if holder, ok, err := ls.Holder(t.Context(), processKey(m.Holder())); err != nil || !ok || holder != "another process" {
		t.Errorf("after Close the key is held by %q (%v, %v), want the other process still", holder, ok, err)
	}
	if (*Member)(nil).Lost() != nil {
		t.Error("no member (the embedded server): want a nil Lost, never closed")
	}
}

// syncBuffer is a bytes.Buffer a logger on another goroutine writes to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Without a cluster (no Member) Run starts the singletons at once and
// returns start's error; Singletons stop in reverse order of Add, once.
func TestRunWithoutAClusterStartsAtOnce(t *testing.T) {
	var m *Member
	var s Singletons
	var order []string
	stop, err := m.Run(t.Context(), nil, nil, func(context.Context) (func(), error) {
		s.Add(func() { order = append(order, "scheduler") })
		s.Add(func() { order = append(order, "telegram") })
		return s.Stop, nil
	})
	if err != nil || len(order) != 0 {
		t.Fatalf("Run = %v, stopped %v before stop", err, order)
	}
	stop()
	stop()
	if strings.Join(order, ",") != "telegram,scheduler" {
		t.Errorf("stopped %v, want telegram then scheduler, once", order)
	}
	refused := errors.New("scheduler: no")
	if _, err := m.Run(t.Context(), nil, nil, func(context.Context) (func(), error) { return nil, refused }); !errors.Is(err, refused) {
		t.Errorf("Run of a start that fails = %v, want its error", err)
	}
}
