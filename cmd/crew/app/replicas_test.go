package app

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/cmd/crew/home"
	"github.com/my-agent-crew/crew/events"
	"github.com/my-agent-crew/crew/events/eventstest"
	"github.com/my-agent-crew/crew/gateways/cluster"
	"github.com/nats-io/nats.go/jetstream"
)

// R-ES-8 (issue 30 item 4): on a real 3-node cluster whose CREW stream
// was made at one replica, the first crew process raises it to three and
// logs it, once; a second process on the same cluster raises and logs
// nothing; doctor's cluster line shows the three replicas and the raise.
func TestClusterStreamAtOneReplicaRaisedOnceLoggedAndShownByDoctor(t *testing.T) {
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
	open := func(name string) (*App, string) {
		dir := filepath.Join(t.TempDir(), name)
		if _, err := home.Init(dir); err != nil {
			t.Fatal(err)
		}
		h, err := home.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		h.Config.NATS.URL = c.URL()
		var out bytes.Buffer
		s := &App{Dir: dir, Home: h, log: slog.New(slog.NewTextHandler(&out, nil))}
		if err := s.openStore(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, out.String()
	}
	first, logged := open("a")
	if !strings.Contains(logged, "raised the event stream's replicas") || !strings.Contains(logged, "from=1 to=3") {
		t.Errorf("the first process's log does not tell the raise from 1 to 3:\n%s", logged)
	}
	if _, logged := open("b"); strings.Contains(logged, "raised") {
		t.Errorf("the second process raised again:\n%s", logged)
	}
	raises, err := first.Log().ReadAll(t.Context(), events.ClusterScope.Filter(), 0)
	if err != nil || len(raises) != 1 {
		t.Fatalf("recorded raises = %d (%v), want one", len(raises), err)
	}
	report := cluster.Report(t.Context(), events.ClientConfig{URL: c.URL()})
	for _, want := range []string{"of 3 servers, stream CREW with 3 replicas", "raised from 1 to 3 replicas on "} {
		if !strings.Contains(report, want) {
			t.Errorf("doctor's cluster line %q does not say %q", report, want)
		}
	}
}
