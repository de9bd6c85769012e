package events_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/nats-io/nats.go"
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

// TestClusterFailover once left a message unanswered whose conversation
// lease, it was suspected, stayed held for good after the lease bucket's
// leader server died. On a real 3-node cluster: a holder takes leases and
// dies, and the bucket's leader server is killed — before the leases run
// out, or while the holder still renews them — and every lease is seen
// free once its TTL is spent (that held before too), and its expiry is
// told to the survivor, as is a later lease's (that did not: the
// survivor's expiry watch stayed silent for good after the kill).
func TestLeasesOfADeadHolderExpireWhenTheBucketLeaderDies(t *testing.T) {
	for _, order := range []string{"holder dies first", "leader dies first"} {
		t.Run(order, func(t *testing.T) {
			c := eventstest.StartCluster(t, 3)
			var ls *events.Leases
			var leader string
			eventstest.Eventually(t, "the lease bucket with a leader", func() bool {
				nc, err := events.Connect(events.ClientConfig{URL: c.URL()})
				if err != nil {
					return false
				}
				defer nc.Close()
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				defer cancel()
				if _, err := events.OpenLeases(ctx, nc); err != nil {
					return false
				}
				js, _ := jetstream.New(nc)
				s, err := js.Stream(ctx, "KV_"+events.LeaseBucket)
				if err != nil || s.CachedInfo().Cluster == nil || s.CachedInfo().Config.Replicas != 3 {
					return false
				}
				leader = s.CachedInfo().Cluster.Leader
				return leader != ""
			})
			// The holder and the survivor talk to the two other servers.
			var others []int
			for i := range 3 {
				if c.Server(i).Name() != leader {
					others = append(others, i)
				}
			}
			connect := func(i int) *nats.Conn {
				nc, err := events.Connect(events.ClientConfig{URL: c.Server(i).ClientURL()})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(nc.Close)
				return nc
			}
			holderNC, survivorNC := connect(others[0]), connect(others[1])
			var err error
			if ls, err = events.OpenLeases(t.Context(), survivorNC); err != nil {
				t.Fatal(err)
			}
			hls, err := events.OpenLeases(t.Context(), holderNC)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			told := map[string]bool{}
			wctx, stop := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() {
				defer close(done)
				ls.Expired(wctx, "conv.*", func(k string) { mu.Lock(); told[k] = true; mu.Unlock() })
			}()
			defer func() { stop(); <-done }()
			// Expiries are told from the moment Expired is under way: a
			// probe lease let run out shows it is, before the leases of
			// the test are taken.
			probeNC := connect(others[0])
			pls, err := events.OpenLeases(t.Context(), probeNC)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pls.Acquire(t.Context(), "conv.probe", "probe", time.Second); err != nil {
				t.Fatal(err)
			}
			probeNC.Close()
			eventstest.EventuallyWithin(t, 30*time.Second, "the probe lease's expiry told", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return told["conv.probe"]
			})

			const n = 40
			keys := make([]string, n)
			for i := range keys {
				keys[i] = fmt.Sprintf("conv.c%02d", i)
				if _, err := hls.Acquire(t.Context(), keys[i], "dead", 2*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			killLeader := func() {
				for i := range 3 {
					if s := c.Server(i); s != nil && s.Name() == leader {
						c.Kill(i)
					}
				}
			}
			if order == "holder dies first" {
				holderNC.Close()
				killLeader()
			} else {
				killLeader()
				// Renewing through the election, then gone.
				eventstest.EventuallyWithin(t, time.Minute, "a new leader of the lease bucket", func() bool {
					js, _ := jetstream.New(survivorNC)
					ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
					defer cancel()
					s, err := js.Stream(ctx, "KV_"+events.LeaseBucket)
					return err == nil && s.CachedInfo().Cluster != nil && s.CachedInfo().Cluster.Leader != "" && s.CachedInfo().Cluster.Leader != leader
				})
				holderNC.Close()
			}
			// Polled with a deadline; what is left is named on failure.
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
				var held []string
				for _, k := range keys {
					ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
					_, ok, err := ls.Holder(ctx, k)
					cancel()
					mu.Lock()
					seen := told[k]
					mu.Unlock()
					if ok || err != nil || !seen {
						held = append(held, fmt.Sprintf("%s (held %v, err %v, expiry told %v)", k, ok, err, seen))
					}
				}
				if len(held) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a minute after a holder of 2 s leases died, %d of %d are not free or their expiry not told: %v", len(held), n, held)
				}
			}
			// A lease taken after the kill and let run out is told too: the
			// survivor's watch may have died with the leader (it did, in 2
			// of 3 runs before Expired swept the bucket as well).
			late := connect(others[0])
			lls, err := events.OpenLeases(t.Context(), late)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := lls.Acquire(t.Context(), "conv.late", "late", 2*time.Second); err != nil {
				t.Fatal(err)
			}
			late.Close()
			eventstest.EventuallyWithin(t, time.Minute, "the expiry of a lease taken after the kill told", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return told["conv.late"]
			})
		})
	}
}

// R-ES-8 for the buckets beside the log: a lease or state bucket found at
// one replica on a cluster of 3 servers is raised to three, keeping its
// keys, and the raise is told once (the next opener finds three).
func TestClusterBucketAtOneReplicaGrowsToThree(t *testing.T) {
	c := eventstest.StartCluster(t, 3)
	nc, err := events.Connect(events.ClientConfig{URL: c.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for _, name := range []string{events.LeaseBucket, events.ScriptBucket} {
		eventstest.Eventually(t, "a one-replica bucket "+name+" on the forming cluster", func() bool {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, History: 1, LimitMarkerTTL: time.Second})
			if err != nil {
				return false
			}
			_, err = kv.Put(ctx, "kept", []byte("yes"))
			return err == nil
		})
	}
	ls, err := events.OpenLeases(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := events.OpenBucket(t.Context(), nc, events.ScriptBucket, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*events.Raise{ls.Raised(), b.Raised()} {
		if r == nil || r.From != 1 || r.To != 3 || r.Servers != 3 {
			t.Errorf("Raised() = %+v, want from 1 to 3 on 3 servers", r)
		}
	}
	for _, name := range []string{events.LeaseBucket, events.ScriptBucket} {
		s, err := js.Stream(t.Context(), "KV_"+name)
		if err != nil || s.CachedInfo().Config.Replicas != 3 {
			t.Errorf("%s after opening: %v replicas (%v), want 3", name, s, err)
		}
	}
	if v, err := b.Get(t.Context(), "kept"); err != nil || string(v) != "yes" {
		t.Errorf("the raised bucket's key = %q (%v), want it kept", v, err)
	}
	again, err := events.OpenBucket(t.Context(), nc, events.ScriptBucket, "test", nil)
	if err != nil || again.Raised() != nil {
		t.Errorf("a second open raised again: %+v (%v)", again.Raised(), err)
	}
	if _, err := b.Get(t.Context(), "never"); !errors.Is(err, events.ErrNotFound) {
		t.Errorf("Get of a missing key = %v, want ErrNotFound", err)
	}
	if err := b.Put(t.Context(), "bad key", nil, 0); !errors.Is(err, events.ErrInvalidID) {
		t.Errorf("Put of a bad key = %v, want ErrInvalidID", err)
	}
}

// OpenStore without a Logger discards what it would tell: a raise of the
// stream's replicas on opening (here a one-replica stream on a cluster of
// 3) opens the store and panics nowhere.
func TestOpenStoreWithoutALoggerTellsARaiseToNobody(t *testing.T) {
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
	s, err := events.OpenStore(t.Context(), events.StoreConfig{Dir: t.TempDir(), Client: events.ClientConfig{URL: c.URL()}, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r := s.Log().Raised(); r == nil || r.From != 1 || r.To != 3 {
		t.Errorf("Raised() = %+v, want from 1 to 3", r)
	}
}
