package events_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/my-agent-crew/crew/events"
	"github.com/nats-io/nats.go/jetstream"
)

// What the embedded server rebuilds at start for de-duplication is the id
// of every message stored within the duplicate window that carries a
// Nats-Msg-Id: a checked append (nearly every event: a conversation's,
// a run's) carries none, so a home started right after a burst holds no
// map of them; an unchecked one still does, and its retry is still
// answered once, before and after a restart.
func TestCheckedAppendsLeaveTheDuplicateWindowEmpty(t *testing.T) {
	dir := t.TempDir()
	srv, err := events.StartServer(events.ServerConfig{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	log, err := events.Open(ctx, srv.Conn(), nil)
	if err != nil {
		t.Fatal(err)
	}
	checked, err := log.Append(ctx, events.Conv("c1"), 0, msg("checked"))
	if err != nil {
		t.Fatal(err)
	}
	unchecked := msg("unchecked")
	stored, err := log.Append(ctx, events.Job("j1"), events.Any, unchecked)
	if err != nil {
		t.Fatal(err)
	}
	header := func(seq uint64) string {
		m, err := log.Stream().GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		return m.Header.Get(jetstream.MsgIDHeader)
	}
	if id := header(checked[0].Seq); id != "" {
		t.Errorf("checked append stored with Nats-Msg-Id %q: the server would hold it in its duplicate window and rebuild it at every start", id)
	}
	if id := header(stored[0].Seq); id != unchecked.ID {
		t.Errorf("unchecked append's Nats-Msg-Id = %q, want its id %q", id, unchecked.ID)
	}
	if w := log.Stream().CachedInfo().Config.Duplicates; w != events.DuplicateWindow {
		t.Errorf("duplicate window %s, want %s", w, events.DuplicateWindow)
	}
	srv.Close()

	// Restarted within the window: both retries are still answered with
	// the original sequence.
	srv, err = events.StartServer(events.ServerConfig{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	log, err = events.Open(ctx, srv.Conn(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := log.Append(ctx, events.Job("j1"), events.Any, unchecked); err != nil || again[0].Seq != stored[0].Seq {
		t.Errorf("unchecked retry after restart: %v, %v; want seq %d", again, err, stored[0].Seq)
	}
	if again, err := log.Append(ctx, events.Conv("c1"), 0, checked[0]); err != nil || again[0].Seq != checked[0].Seq {
		t.Errorf("checked retry after restart: %v, %v; want seq %d", again, err, checked[0].Seq)
	}
	if last, _ := log.Last(ctx, events.Root+".>"); last != stored[0].Seq {
		t.Errorf("last sequence %d after the retries, want %d: a retry was stored again", last, stored[0].Seq)
	}
}

// BenchmarkStartWithinDuplicateWindow measures what the embedded server
// holds after a start within the duplicate window of a burst of events
// (CREW_BENCH_EVENTS, default 200,000): the time to start (ns/op) and
// the heap after a GC, beside the same burst written with a Nats-Msg-Id
// on every event and a 2-minute window (as every append was before), in
// one run.
func BenchmarkStartWithinDuplicateWindow(b *testing.B) {
	n := 200_000
	if v, err := strconv.Atoi(os.Getenv("CREW_BENCH_EVENTS")); err == nil && v > 0 {
		n = v
	}
	for _, tc := range []struct {
		name  string
		msgID bool
	}{{"checked_appends", false}, {"raw_every_event_with_msg_id", true}} {
		b.Run(tc.name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "nats")
			srv, err := events.StartServer(events.ServerConfig{StoreDir: dir, Sync: events.SyncInterval})
			if err != nil {
				b.Fatal(err)
			}
			log, err := events.Open(context.Background(), srv.Conn(), nil)
			if err != nil {
				b.Fatal(err)
			}
			if tc.msgID { // the window every append asked for before
				cfg := events.StreamConfig()
				cfg.Duplicates = 2 * time.Minute
				if _, err := log.JetStream().UpdateStream(context.Background(), cfg); err != nil {
					b.Fatal(err)
				}
			}
			burst(b, log, n, tc.msgID)
			srv.Close()
			runtime.GC()
			before := heapInUse()
			for b.Loop() {
				srv, err := events.StartServer(events.ServerConfig{StoreDir: dir, Sync: events.SyncInterval})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(heapInUse()-min(before, heapInUse()))/(1<<20), "heap-after-start-MB")
				srv.Close()
			}
		})
	}
}

// burst writes n events on 1,000 conversations: through Append (checked),
// or as raw publishes each with a Nats-Msg-Id.
func burst(b *testing.B, log *events.Log, n int, msgID bool) {
	ctx := context.Background()
	js := log.JetStream()
	last := map[string]uint64{}
	for i := range n {
		id := fmt.Sprintf("c%04d", i%1000)
		env := msg(fmt.Sprintf("message %d", i))
		if msgID {
			body := mustBody(b, env)
			if _, err := js.Publish(ctx, events.Conv(id).Subject(env.Type), body, jetstream.WithMsgID(env.ID)); err != nil {
				b.Fatal(err)
			}
			continue
		}
		out, err := log.Append(ctx, events.Conv(id), last[id], env)
		if err != nil {
			b.Fatal(err)
		}
		last[id] = out[0].Seq
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// BenchmarkSubjectIndex measures what the embedded server keeps in memory
// per subject: the heap after a start (after a GC) of a stream of n
// subjects of one event each (CREW_BENCH_SUBJECTS, default 100,000),
// beside the same stream's start with all the events on one subject.
func BenchmarkSubjectIndex(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("CREW_BENCH_SUBJECTS")); err == nil && v > 0 {
		n = v
	}
	for _, tc := range []struct {
		name     string
		subjects int
	}{{"one_subject", 1}, {"subject_per_event", n}} {
		b.Run(tc.name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "nats")
			srv, err := events.StartServer(events.ServerConfig{StoreDir: dir, Sync: events.SyncInterval})
			if err != nil {
				b.Fatal(err)
			}
			js := srv.Conn()
			jsc, err := jetstream.New(js)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := jsc.CreateStream(context.Background(), events.StreamConfig()); err != nil {
				b.Fatal(err)
			}
			body := mustBody(b, msg("x"))
			for i := range n {
				if _, err := jsc.PublishAsync(fmt.Sprintf("crew.conv.c%07d.message_received", i%tc.subjects), body); err != nil {
					b.Fatal(err)
				}
				if i%1000 == 999 {
					<-jsc.PublishAsyncComplete()
				}
			}
			<-jsc.PublishAsyncComplete()
			srv.Close()
			before := heapInUse()
			for b.Loop() {
				srv, err := events.StartServer(events.ServerConfig{StoreDir: dir, Sync: events.SyncInterval})
				if err != nil {
					b.Fatal(err)
				}
				after := heapInUse()
				b.ReportMetric(float64(after-min(before, after))/(1<<20), "heap-after-start-MB")
				srv.Close()
			}
		})
	}
}
