package cluster

import (
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/loop"
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
