package cluster

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
)

// R-ES-8 (issue 30 item 4): a stream found at one replica on a cluster
// of 3 servers that cannot place 3 (one of them holds no JetStream) is
// left at one, and that is not silent: the opener warns, and doctor's
// cluster line says the stream and the lease bucket are short of 3.
func TestStreamLeftShortOfReplicasIsWarnedAndShown(t *testing.T) {
	c := eventstest.StartCluster(t, 3, eventstest.WithoutJetStream(2))
	nc, err := events.Connect(events.ClientConfig{URL: c.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var out bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&out, nil))
	var log *events.Log
	eventstest.EventuallyWithin(t, time.Minute, "the log opened on the cluster", func() bool {
		log, err = events.Open(t.Context(), nc, nil)
		return err == nil
	})
	if _, err := events.OpenLeases(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	if have, servers := log.Short(); have != 1 || servers != 3 {
		t.Fatalf("Short() = %d on %d servers, want 1 on 3", have, servers)
	}
	log.TellReplicas(logger)
	if !strings.Contains(out.String(), "level=WARN") || !strings.Contains(out.String(), "stays short of its replicas") || !strings.Contains(out.String(), "replicas=1 want=3 servers=3") {
		t.Errorf("the opener's log does not warn of the shortfall:\n%s", out.String())
	}
	line := Replication(t.Context(), nc)
	for _, want := range []string{"stream CREW with 1 replicas", "short of 3 replicas: not raised yet", "buckets crew_leases 1 (short of 3)"} {
		if !strings.Contains(line, want) {
			t.Errorf("doctor's cluster line %q does not say %q", line, want)
		}
	}
	// A log that is not short says nothing at warn.
	out.Reset()
	_, single := eventstest.Start(t)
	single.TellReplicas(logger)
	if out.Len() != 0 {
		t.Errorf("a single-server log logged: %s", out.String())
	}
}

// What serve prints of its log: where the embedded server listens (nothing
// when in-process only), or the replication of the server at nats.url,
// named without its password.
func TestDescribeSaysWhereTheLogIs(t *testing.T) {
	ctx := t.Context()
	open := func(cfg events.StoreConfig) *events.Store {
		t.Helper()
		cfg.Dir, cfg.Logger = t.TempDir(), slog.New(slog.DiscardHandler)
		s, err := events.OpenStore(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	if got := Describe(ctx, open(events.StoreConfig{}), ""); got != "" {
		t.Errorf("in-process only: %q, want nothing", got)
	}
	listening := open(events.StoreConfig{Server: events.ServerConfig{Listen: "127.0.0.1:-1"}})
	u := listening.Server().ClientURL()
	if got, want := Describe(ctx, listening, ""), "embedded NATS is reachable at "+u+": nats --server "+u+" stream info CREW"; got != want {
		t.Errorf("listening: %q, want %q", got, want)
	}
	withPassword := strings.Replace(u, "nats://", "nats://crew:secret@", 1)
	got := Describe(ctx, open(events.StoreConfig{Client: events.ClientConfig{URL: u}, Node: "n1"}), withPassword)
	if !strings.HasPrefix(got, "event log on NATS nats://crew:xxxxx@127.0.0.1:") || !strings.Contains(got, "stream CREW with 1 replicas") || strings.Contains(got, "secret") {
		t.Errorf("at nats.url: %q", got)
	}
}
