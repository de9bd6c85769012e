package events_test

import (
	"errors"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// R-ES-8: a lease is held by one process at a time; renewals keep it past
// its TTL; a holder that stops renewing (dies) loses it within the TTL;
// a release frees it at once.
func TestLeaseIsExclusiveRenewedAndExpires(t *testing.T) {
	srv, _ := eventstest.Start(t)
	nc := srv.Conn()
	ctx := t.Context()
	a, err := events.AcquireLease(ctx, nc, "serve", "process a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var held *events.HeldError
	if _, err := events.AcquireLease(ctx, nc, "serve", "process b", time.Second); !errors.As(err, &held) || held.Holder != "process a" {
		t.Fatalf("second acquire: %v; want held by process a", err)
	}
	// Three TTLs later a is still the holder: renewals carry the TTL.
	time.Sleep(3 * time.Second)
	if _, err := events.AcquireLease(ctx, nc, "serve", "process b", time.Second); !errors.As(err, &held) {
		t.Fatalf("acquire after renewals: %v; want still held", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	other, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	b, err := events.AcquireLease(ctx, other, "serve", "process b", time.Second)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	// b dies (its connection goes): nothing renews the lease, and c gets
	// it once the TTL has passed.
	other.Close()
	eventstest.Eventually(t, "the abandoned lease to expire", func() bool {
		c, err := events.AcquireLease(ctx, nc, "serve", "process c", time.Second)
		if err == nil {
			c.Release(ctx)
		}
		return err == nil
	})
	eventstest.Eventually(t, "the dead holder's lease to say it is lost", func() bool {
		select {
		case <-b.Lost():
			return true
		default:
			return false
		}
	})
}
