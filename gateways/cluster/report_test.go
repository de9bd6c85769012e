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
