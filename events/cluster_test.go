package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/nats-io/nats.go/jetstream"
)

// R-ES-8: a stream left at one replica (made while the cluster had fewer
// servers, or by an older build) is raised to three once the cluster has
// three servers, keeping its events.
func TestClusterStreamAtOneReplicaGrowsToThree(t *testing.T) {
	c := eventstest.StartCluster(t, 3)
	nc, err := events.Connect(events.ClientConfig{URL: c.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	eventstest.Eventually(t, "a one-replica stream on the forming cluster", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := js.CreateStream(ctx, events.StreamConfig())
		return err == nil
	})
	if _, err := js.Publish(t.Context(), events.Root+".conv.c1.message_received", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	log, err := events.Open(t.Context(), nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := log.Stream().Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Replicas != 3 {
		t.Fatalf("after Open: %d replicas; want 3", info.Config.Replicas)
	}
	if kept, err := log.Last(t.Context(), events.Root+".conv.>"); err != nil || kept != 1 {
		t.Fatalf("after Open: the conversation's last message at %d (%v); want the message kept at 1", kept, err)
	}
	// Raised once, and recorded once: a second process opening the
	// raised stream raises and records nothing.
	if r := log.Raised(); r == nil || r.From != 1 || r.To != 3 || r.Servers != 3 {
		t.Errorf("Raised() = %+v, want from 1 to 3 on 3 servers", r)
	}
	again, err := events.Open(t.Context(), nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := again.Raised(); r != nil {
		t.Errorf("second Open raised again: %+v", r)
	}
	raises, err := log.ReadAll(t.Context(), events.ClusterScope.Filter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(raises) != 1 || raises[0].Type != events.TypeStreamReplicasRaised {
		t.Fatalf("recorded raises = %v, want one stream_replicas_raised", raises)
	}
}

// R-ES-8: a lease that runs out because its holder died is told to the
// other processes (they take its work over); a release is not an expiry.
// Holder names who holds a key.
func TestLeaseExpiryIsToldReleaseIsNot(t *testing.T) {
	srv, _ := eventstest.Start(t)
	ctx := t.Context()
	ls, err := events.OpenLeases(ctx, srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	expired := make(chan string, 4)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); ls.Expired(wctx, "conv.*", func(k string) { expired <- k }) }()
	defer func() { stop(); <-done }()

	released, err := ls.Acquire(ctx, "conv.released", "p1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if h, ok, err := ls.Holder(ctx, "conv.released"); err != nil || !ok || h != "p1" {
		t.Fatalf("holder: %q %v %v; want p1", h, ok, err)
	}
	if err := released.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := ls.Holder(ctx, "conv.released"); ok {
		t.Fatal("a released lease still has a holder")
	}
	// A holder whose connection dies stops renewing.
	other, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	ols, err := events.OpenLeases(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ols.Acquire(ctx, "conv.dies", "p2", time.Second); err != nil {
		t.Fatal(err)
	}
	other.Close()
	select {
	case k := <-expired:
		if k != "conv.dies" {
			t.Fatalf("expiry of %q, want conv.dies only (a release is not one)", k)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no expiry told within 30 s of a 1 s lease")
	}
}
